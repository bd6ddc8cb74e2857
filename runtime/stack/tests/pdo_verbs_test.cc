// A kernel ULP on an IPoIB PDO, as a real one loads: it hears the softib.ipoib interface
// arrival, attaches a device of its own over the PDO and opens the AL for that device. It
// then raises to DISPATCH and issues its verbs as internal IOCTL IRPs sent to its PDO, with
// completion routines (nothing waits at DISPATCH; the test thread waits at PASSIVE for each
// completion), and the bus forwards them to the AL. The same sequence by the generated
// direct calls, on an identical node, must give the same statuses and output bytes. When
// the CA goes, the REMOVE reaches the ULP before its PDO is deleted, and a verb IRP sent to
// the PDO then completes CA_REMOVED.
#include <endian.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_mcast_direct.h"
#include "kernel/verbs_mr_mw_direct.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "kernel/verbs_srq_direct.h"
#include "softib/al/access_layer.h"
#include "softib/bus/bus_driver.h"
#include "softib/kernel/device.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/pnp.h"
#include "softib/stack/node_stack.h"

namespace softib::stack {
namespace {

using kernel::Irp;
using kernel::Status;

constexpr uint64_t kGuid0 = 0x0002c90300c0d001ull;
constexpr uint64_t kGuid1 = 0x0002c90300c0d002ull;

enum class Via { kDirect, kPdoIrp };

// One verb's result: what the comparison between the paths looks at.
struct Step {
  std::string verb;
  Status status;
  std::vector<uint8_t> output;
  bool operator==(const Step&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Step& step) {
  return os << step.verb << ": " << static_cast<int>(step.status) << " (" << step.output.size()
            << " bytes)";
}

// Where a completion routine leaves an IRP's result for the waiting thread.
struct Completion {
  void* output = nullptr;
  uint32_t output_length = 0;
  Status status = Status::PENDING;
  uint64_t information = 0;
  kernel::Irql irql = kernel::Irql::kPassive;
  kernel::KEvent done{kernel::EventType::kNotification};

  // Claims the IRP back (the waiter frees it) after copying the output out of the system
  // buffer (the I/O manager would copy it only after the routine, too late for the waiter).
  static kernel::CompletionAction Routine(kernel::DeviceObject*, Irp* irp, void* context) {
    auto* self = static_cast<Completion*>(context);
    if (self->output != nullptr && irp->AssociatedIrp.SystemBuffer != nullptr) {
      std::memcpy(self->output, irp->AssociatedIrp.SystemBuffer,
                  std::min<uint64_t>(self->output_length, irp->IoStatus.Information));
    }
    self->status = irp->IoStatus.Status;
    self->information = irp->IoStatus.Information;
    self->irql = kernel::CurrentIrql();
    kernel::KeSetEvent(&self->done);
    return kernel::CompletionAction::kMoreProcessingRequired;
  }
  bool Wait() {
    return kernel::KeWaitForSingleObject(&done, std::chrono::seconds(10)) == Status::SUCCESS;
  }
};

// The ULP driver: one device over port 1's PDO of CA kGuid0.
class Ulp {
 public:
  explicit Ulp(kernel::Node* node) : node_(node) {
    EXPECT_EQ(kernel::IoCreateDriver(node, "ulp_ipoib", &DriverEntry, this, &driver_),
              Status::SUCCESS);
    EXPECT_EQ(kernel::IoRegisterPlugPlayNotification(node, bus::kIpoibInterfaceClass, true,
                                                     &OnArrival, this, &registration_),
              Status::SUCCESS);
  }
  ~Ulp() {
    StopListening();
    kernel::IoUnloadDriver(driver_);
  }
  void StopListening() {
    if (registration_ != nullptr) {
      kernel::IoUnregisterPlugPlayNotification(std::exchange(registration_, nullptr));
    }
  }

  bool WaitOpen() {
    return kernel::KeWaitForSingleObject(&opened_, std::chrono::seconds(10)) == Status::SUCCESS;
  }
  bool WaitRemoved() {
    return kernel::KeWaitForSingleObject(&removed_, std::chrono::seconds(10)) == Status::SUCCESS;
  }
  kernel::IbAl* al() const { return al_; }
  kernel::DeviceObject* pdo() const { return pdo_; }
  kernel::DeviceObject* fdo() const { return fdo_; }
  int8_t pdo_stack_size() const { return pdo_stack_size_; }

  // Runs `call` at `irql` (the direct call, or building and sending the IRP to the PDO),
  // then waits at PASSIVE for the IRP's completion routine.
  Step Call(const char* verb, Via via, bool at_dispatch, void* output, uint32_t output_length,
            const std::function<Status(Irp*)>& direct, const std::function<Irp*()>& build) {
    Completion c;
    c.output = via == Via::kPdoIrp ? output : nullptr;
    c.output_length = output_length;
    Irp* irp = nullptr;
    {
      std::unique_ptr<kernel::ScopedIrql> raised;
      if (at_dispatch) raised = std::make_unique<kernel::ScopedIrql>(kernel::Irql::kDispatch);
      if (via == Via::kDirect) {
        // The direct call gets an IRP of the ULP's own, so that a verb that pends can
        // complete it later; one that finishes at once completes it before returning.
        irp = kernel::IoAllocateIrp(1);
        kernel::IoSetIrpNode(irp, node_);
        kernel::IoSetCompletionRoutine(irp, &Completion::Routine, &c, true, true, true);
        direct(irp);
      } else {
        irp = build();
        EXPECT_NE(irp, nullptr) << verb;
        if (irp == nullptr) return {verb, Status::INSUFFICIENT_RESOURCES, {}};
        kernel::IoSetCompletionRoutine(irp, &Completion::Routine, &c, true, true, true);
        kernel::IoCallDriver(pdo_, irp);
      }
    }
    EXPECT_TRUE(c.Wait()) << verb;
    kernel::IoFreeIrp(irp);
    const auto* bytes = static_cast<const uint8_t*>(output);
    return {verb, c.status, std::vector<uint8_t>(bytes, bytes + output_length)};
  }

  // The probe the REMOVE handler sent to the PDO once its CA had gone.
  Status removal_probe = Status::PENDING;
  kernel::Irql removal_probe_irql = kernel::Irql::kPassive;
  uint64_t probe_ca = 0;

 private:
  static Status DriverEntry(kernel::DriverObject* driver, void* context) {
    driver->DriverExtension = context;
    for (auto& dispatch : driver->MajorFunction) dispatch = &Dispatch;
    driver->Unload = [](kernel::DriverObject*) {};
    return Status::SUCCESS;
  }

  static void OnArrival(const kernel::PnpNotification& n, void* context) {
    auto* self = static_cast<Ulp*>(context);
    if (n.event != kernel::PnpEvent::kArrival || self->fdo_ != nullptr) return;
    bus::PdoIdentity identity{};
    Irp* irp = kernel::IoBuildDeviceIoControlRequest(bus::kIoctlBusQueryIdentity, n.device, nullptr,
                                                     0, &identity, sizeof identity, true);
    if (kernel::IoCallDriverAndWait(n.device, irp) != Status::SUCCESS) return;
    if (identity.ca_guid != kGuid0 || identity.port != 1) return;
    kernel::DeviceObject* fdo = nullptr;
    if (kernel::IoCreateDevice(self->driver_, 0, nullptr, 0, &fdo) != Status::SUCCESS) return;
    self->pdo_ = n.device;
    kernel::ObReferenceObject(self->pdo_);
    self->pdo_stack_size_ = n.device->StackSize;
    self->lower_ = kernel::IoAttachDeviceToDeviceStack(fdo, n.device);
    self->fdo_ = fdo;
    EXPECT_EQ(kernel::IbOpenAl(self->node_, fdo, &self->al_), Status::SUCCESS);
    kernel::KeSetEvent(&self->opened_);
  }

  static Status Dispatch(kernel::DeviceObject* device, Irp* irp) {
    auto* self = static_cast<Ulp*>(device->DriverObject->DriverExtension);
    kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
    if (location->MajorFunction == kernel::IrpMajor::kPnp &&
        location->MinorFunction == kernel::kIrpMinorRemoveDevice) {
      return self->OnRemove(irp);
    }
    irp->IoStatus.Status = Status::UNSUPPORTED;
    kernel::IoCompleteRequest(irp);
    return Status::UNSUPPORTED;
  }

  // The REMOVE comes down the PDO's stack while the PDO still exists: a verb IRP sent to it
  // now (at DISPATCH, completion routine) must complete CA_REMOVED. Then the ULP lets go:
  // its AL instance, its device, and the REMOVE goes on down.
  Status OnRemove(Irp* irp) {
    abi::QueryCaOut out{};
    Completion c;
    Irp* probe = nullptr;
    {
      const kernel::ScopedIrql dispatch(kernel::Irql::kDispatch);
      probe =
          kernel::BuildQueryCaIrp(pdo_, kernel::IbGetAlFile(al_), {{probe_ca}}, &out, sizeof out);
      kernel::IoSetCompletionRoutine(probe, &Completion::Routine, &c, true, true, true);
      kernel::IoCallDriver(pdo_, probe);
    }
    EXPECT_TRUE(c.Wait());
    kernel::IoFreeIrp(probe);
    removal_probe = c.status;
    removal_probe_irql = c.irql;
    kernel::IbReleaseAl(std::exchange(al_, nullptr));
    kernel::IoDetachDevice(lower_);
    kernel::IoSkipCurrentIrpStackLocation(irp);
    const Status status = kernel::IoCallDriver(lower_, irp);
    kernel::IoDeleteDevice(std::exchange(fdo_, nullptr));
    kernel::ObDereferenceObject(std::exchange(pdo_, nullptr));
    kernel::KeSetEvent(&removed_);
    return status;
  }

  kernel::Node* node_;
  kernel::DriverObject* driver_ = nullptr;
  kernel::PnpRegistration* registration_ = nullptr;
  kernel::DeviceObject* pdo_ = nullptr;
  kernel::DeviceObject* lower_ = nullptr;
  kernel::DeviceObject* fdo_ = nullptr;
  int8_t pdo_stack_size_ = 0;
  kernel::IbAl* al_ = nullptr;
  kernel::KEvent opened_{kernel::EventType::kNotification};
  kernel::KEvent removed_{kernel::EventType::kNotification};
};

// The verbs a ULP issues, by `via`; every result recorded. The CA stays open for the
// removal probe. `buffer` is the same memory for both runs (its address is in the outputs).
std::vector<Step> RunVerbs(Ulp& ulp, Via via, std::vector<uint8_t>& buffer) {
  std::vector<Step> steps;
  kernel::IbAl* al = ulp.al();
  kernel::DeviceObject* pdo = ulp.pdo();
  kernel::FileObject* file = kernel::IbGetAlFile(al);
  constexpr bool kPassive = false, kDispatch = true;
  // A verb with an output structure, and one without.
#define SOFTIB_OUT(Verb, irql, in, out)                             \
  steps.push_back(ulp.Call(                                         \
      #Verb, via, irql, &(out), sizeof(out),                        \
      [&](Irp* irp) { return kernel::Ib##Verb(al, in, out, irp); }, \
      [&]() { return kernel::Build##Verb##Irp(pdo, file, in, &(out)); }))
#define SOFTIB_NONE(Verb, irql, in)                                                          \
  steps.push_back(ulp.Call(                                                                  \
      #Verb, via, irql, nullptr, 0, [&](Irp* irp) { return kernel::Ib##Verb(al, in, irp); }, \
      [&]() { return kernel::Build##Verb##Irp(pdo, file, in); }))

  abi::OpenCaOut ca{};
  const abi::OpenCaIn open_ca{{kernel::IbGetAlHandle(al)}, htobe64(kGuid0), 0x1111};
  SOFTIB_OUT(OpenCa, kPassive, open_ca, ca);
  ulp.probe_ca = ca.ca.value;

  // QueryCa: its ports follow the fixed part in the output.
  std::vector<uint8_t> query_ca(sizeof(abi::QueryCaOut) + 8 * sizeof(abi::PortAttributes), 0);
  {
    const abi::QueryCaIn in{{ca.ca.value}};
    auto* out = reinterpret_cast<abi::QueryCaOut*>(query_ca.data());
    const std::span<abi::PortAttributes> ports(
        reinterpret_cast<abi::PortAttributes*>(query_ca.data() + sizeof(abi::QueryCaOut)), 8);
    steps.push_back(ulp.Call(
        "QueryCa", via, kDispatch, query_ca.data(), static_cast<uint32_t>(query_ca.size()),
        [&](Irp* irp) { return kernel::IbQueryCa(al, in, *out, ports, irp); },
        [&]() {
          return kernel::BuildQueryCaIrp(pdo, file, in, query_ca.data(),
                                         static_cast<uint32_t>(query_ca.size()));
        }));
  }

  abi::AllocPdOut pd{};
  SOFTIB_OUT(AllocPd, kDispatch, (abi::AllocPdIn{{ca.ca.value}, abi::PdType{}, 0, 0}), pd);

  abi::RegMemIn reg{};
  reg.pd = pd.pd;
  reg.region.vaddr = reinterpret_cast<uint64_t>(buffer.data());
  reg.region.length = buffer.size();
  reg.region.access = abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE |
                      abi::AccessFlags::REMOTE_READ | abi::AccessFlags::MW_BIND;
  abi::RegMemOut mr{};
  SOFTIB_OUT(RegMem, kPassive, reg, mr);
  abi::QueryMrOut query_mr{};
  SOFTIB_OUT(QueryMr, kDispatch, (abi::QueryMrIn{mr.mr}), query_mr);

  abi::CreateCqOut cq{};
  SOFTIB_OUT(CreateCq, kDispatch, (abi::CreateCqIn{{ca.ca.value}, 128, 0, 0xC0FFEE}), cq);
  abi::QueryCqOut query_cq{};
  SOFTIB_OUT(QueryCq, kDispatch, (abi::QueryCqIn{cq.cq}), query_cq);

  abi::CreateSrqIn srq_in{};
  srq_in.pd = pd.pd;
  srq_in.attributes = {64, 2, 0, 0};
  srq_in.context = 0x5151;
  abi::CreateSrqOut srq{};
  SOFTIB_OUT(CreateSrq, kDispatch, srq_in, srq);
  abi::ModifySrqIn modify_srq{};
  modify_srq.srq = srq.srq;
  modify_srq.mask = abi::SrqAttrMask::LIMIT;
  modify_srq.attributes.srq_limit = 8;
  SOFTIB_NONE(ModifySrq, kDispatch, modify_srq);
  abi::QuerySrqOut query_srq{};
  SOFTIB_OUT(QuerySrq, kDispatch, (abi::QuerySrqIn{srq.srq}), query_srq);

  // A UD QP: created, brought to RTS, queried, attached to a multicast group and detached.
  abi::CreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::UD;
  qp_in.params.sq_signaled = 1;
  qp_in.params.caps = {32, 32, 2, 2, 0, 0};
  qp_in.context = 0x9999;
  abi::CreateQpOut qp{};
  SOFTIB_OUT(CreateQp, kDispatch, qp_in, qp);
  using M = abi::QpAttrMask;
  abi::ModifyQpIn modify{};
  modify.qp = qp.qp;
  modify.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
  modify.attributes.state = abi::QpState::INIT;
  modify.attributes.port_num = 1;
  modify.attributes.qkey = htobe32(0x11111111);
  SOFTIB_NONE(ModifyQp, kDispatch, modify);
  modify.attributes = {};
  modify.attributes.mask = M::STATE;
  modify.attributes.state = abi::QpState::RTR;
  SOFTIB_NONE(ModifyQp, kDispatch, modify);
  modify.attributes.mask = M::STATE | M::SQ_PSN;
  modify.attributes.state = abi::QpState::RTS;
  modify.attributes.sq_psn = 0x42;
  SOFTIB_NONE(ModifyQp, kDispatch, modify);
  abi::QueryQpOut query_qp{};
  SOFTIB_OUT(QueryQp, kDispatch, (abi::QueryQpIn{qp.qp}), query_qp);

  abi::AttachMcastIn attach{};
  attach.qp = qp.qp;
  attach.mgid.raw[0] = 0xFF;
  attach.mgid.raw[1] = 0x12;
  attach.mgid.raw[15] = 0x01;
  attach.mlid = 0xC001;
  abi::AttachMcastOut mcast{};
  SOFTIB_OUT(AttachMcast, kDispatch, attach, mcast);
  SOFTIB_NONE(DetachMcast, kDispatch, (abi::DetachMcastIn{mcast.mcast}));

  abi::CreateAvIn av_in{};
  av_in.pd = pd.pd;
  av_in.attributes.port_num = 1;
  av_in.attributes.dlid = 2;
  av_in.attributes.sl = 3;
  abi::CreateAvOut av{};
  SOFTIB_OUT(CreateAv, kDispatch, av_in, av);
  abi::QueryAvOut query_av{};
  SOFTIB_OUT(QueryAv, kDispatch, (abi::QueryAvIn{av.av}), query_av);
  SOFTIB_NONE(DestroyAv, kDispatch, (abi::DestroyAvIn{av.av}));

  abi::CreateMwOut mw{};
  SOFTIB_OUT(CreateMw, kDispatch, (abi::CreateMwIn{pd.pd, abi::MwType::TYPE1, 0}), mw);
  abi::QueryMwOut query_mw{};
  SOFTIB_OUT(QueryMw, kDispatch, (abi::QueryMwIn{mw.mw}), query_mw);
  SOFTIB_NONE(DestroyMw, kDispatch, (abi::DestroyMwIn{mw.mw}));

  SOFTIB_NONE(DestroyQp, kDispatch, (abi::DestroyQpIn{qp.qp}));
  SOFTIB_NONE(DestroySrq, kDispatch, (abi::DestroySrqIn{srq.srq}));
  SOFTIB_NONE(DestroyCq, kDispatch, (abi::DestroyCqIn{cq.cq}));
  SOFTIB_NONE(DeregMr, kDispatch, (abi::DeregMrIn{mr.mr}));
  SOFTIB_NONE(DeallocPd, kDispatch, (abi::DeallocPdIn{pd.pd}));
  // A handle that was just destroyed: the same refusal both ways.
  SOFTIB_NONE(DeallocPd, kDispatch, (abi::DeallocPdIn{pd.pd}));
#undef SOFTIB_OUT
#undef SOFTIB_NONE
  return steps;
}

struct PathRun {
  std::vector<Step> steps;
  int8_t pdo_stack_size = 0;
  Status removal_probe = Status::PENDING;
  kernel::Irql removal_probe_irql = kernel::Irql::kPassive;
};

// Boots a node with two cabled CAs of fixed GUIDs, loads the ULP, runs the verbs by `via`,
// then removes the CA under the ULP's PDO.
void RunOnFreshNode(const char* name, Via via, std::vector<uint8_t>& buffer, PathRun* run) {
  NodeConfig config;
  config.name = name;
  config.cas = {CaConfig(kGuid0, 1), CaConfig(kGuid1, 1)};
  Status status = Status::ERROR;
  auto node = NodeStack::Boot(config, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  Ulp ulp(node->node());
  ASSERT_TRUE(ulp.WaitOpen());
  run->pdo_stack_size = ulp.pdo_stack_size();
  std::fill(buffer.begin(), buffer.end(), 0);
  run->steps = RunVerbs(ulp, via, buffer);
  ulp.StopListening();
  ASSERT_EQ(node->RemoveCa(kGuid0), Status::SUCCESS);  // its PDOs are gone on return
  ASSERT_TRUE(ulp.WaitRemoved());
  run->removal_probe = ulp.removal_probe;
  run->removal_probe_irql = ulp.removal_probe_irql;
  EXPECT_EQ(ulp.fdo(), nullptr);
}

TEST(PdoVerbs, AUlpAtDispatchThroughItsPdoGetsWhatTheDirectCallsGet) {
  std::vector<uint8_t> buffer(1 << 14);
  PathRun direct, irp;
  ASSERT_NO_FATAL_FAILURE(RunOnFreshNode("pdo-verbs-direct", Via::kDirect, buffer, &direct));
  ASSERT_NO_FATAL_FAILURE(RunOnFreshNode("pdo-verbs-irp", Via::kPdoIrp, buffer, &irp));

  // The PDO leaves room for the AL device it forwards to (StackSize 1) besides its own.
  EXPECT_EQ(irp.pdo_stack_size, 2);
  ASSERT_EQ(irp.steps.size(), direct.steps.size());
  for (std::size_t i = 0; i < irp.steps.size(); ++i) {
    EXPECT_EQ(irp.steps[i], direct.steps[i]) << "step " << i;
    // Every verb succeeds but the last (the PD it names was just deallocated).
    const Status expected = i + 1 == irp.steps.size() ? Status::INVALID_PD_HANDLE : Status::SUCCESS;
    EXPECT_EQ(irp.steps[i].status, expected) << irp.steps[i];
  }
  // Outputs that prove the verbs reached the CA (both paths equal, checked above).
  const auto find = [&](const char* verb) {
    for (const Step& s : irp.steps) {
      if (s.verb == verb) return s;
    }
    return Step{};
  };
  abi::QueryQpOut qp{};
  const Step query_qp = find("QueryQp");
  ASSERT_EQ(query_qp.output.size(), sizeof qp);
  std::memcpy(&qp, query_qp.output.data(), sizeof qp);
  EXPECT_EQ(qp.attributes.state, abi::QpState::RTS);
  EXPECT_EQ(qp.attributes.sq_psn, 0x42u);
  abi::QueryCaOut ca{};
  const Step query_ca = find("QueryCa");
  std::memcpy(&ca, query_ca.output.data(), sizeof ca);
  EXPECT_EQ(be64toh(ca.attributes.ca_guid), kGuid0);
  EXPECT_EQ(ca.num_ports, 1u);

  // After the CA's removal, before the PDO went: the PDO's own answer, at DISPATCH.
  EXPECT_EQ(irp.removal_probe, Status::CA_REMOVED);
  EXPECT_EQ(irp.removal_probe_irql, kernel::Irql::kDispatch);
  EXPECT_EQ(direct.removal_probe, Status::CA_REMOVED);
}

}  // namespace
}  // namespace softib::stack
