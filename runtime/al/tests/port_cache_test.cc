// The AL's own uses of the CI as IRPs (issue 17), with the HCA completing inline and in its
// pend mode (every CI IRP completed later from its DPC): the port attribute cache is filled
// at the CA's arrival and refreshed before a port event is announced (a client that hears
// LID_CHANGE finds the new LID in it), QP0/QP1 came up through their IRP chains, a destroy
// verb completes after its CI release IRP, and a user file's cleanup releases everything.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "kernel/hca/ci_irp.h"
#include "kernel_client.h"
#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/special_qp.h"

namespace softib::testing {
namespace {

class AlCiIrps : public ::testing::TestWithParam<bool> {};

TEST_P(AlCiIrps, ThePortCacheIsFilledAtArrivalAndRefreshedBeforeALidChangeIsAnnounced) {
  std::unique_ptr<stack::NodeStack> node;
  {
    PendMode pend(GetParam());
    node = BootDefault(GetParam() ? "cache-pend" : "cache-inline");
  }
  ASSERT_TRUE(node);
  const uint64_t guid = node->ca_guids()[0];
  Client client(node->node());
  abi::OpenCaOut open{};
  ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(guid), 0x11}, &open), Status::SUCCESS);
  abi::QueryCaOut query{};
  std::vector<abi::PortAttributes> ports;
  ASSERT_EQ(client.QueryCa(open.ca.value, &query, &ports), Status::SUCCESS);
  ASSERT_FALSE(ports.empty());
  std::shared_ptr<al::AlCa> ca = node->access_layer()->FindCa(guid);
  ASSERT_TRUE(ca);

  // As the CA reported them at arrival: attributes, P_Key table, GID table.
  abi::PortAttributes cached{};
  ASSERT_TRUE(ca->CachedPortAttributes(1, &cached));
  EXPECT_EQ(cached.port_guid, ports[0].port_guid);
  EXPECT_EQ(cached.lid, ports[0].lid);
  EXPECT_EQ(cached.link_state, 4);
  EXPECT_FALSE(ca->CachedPortAttributes(2, &cached));  // no such port
  std::vector<uint16_t> pkeys;
  ASSERT_TRUE(ca->CachedPkeyTable(1, &pkeys));
  ASSERT_EQ(pkeys.size(), ports[0].num_pkeys);
  EXPECT_EQ(pkeys[0], 0xFFFF);  // the default partition, full member
  {
    kernel::SpinLockGuard guard(ca->lock);
    ASSERT_EQ(ca->cached_ports.size(), 1u);
    ASSERT_EQ(ca->cached_ports[0].gids.size(), ports[0].num_gids);
    uint64_t interface_id = 0;  // GID 0: the subnet prefix and the port GUID
    std::memcpy(&interface_id, ca->cached_ports[0].gids[0].raw + 8, 8);
    EXPECT_EQ(interface_id, ports[0].port_guid);  // both network order
    EXPECT_EQ(ca->cached_ca.num_ports, 1u);
  }

  // SubnSet(PortInfo) with a new LID: the SMA reports LID_CHANGE; when the client hears
  // it, the cache holds the new LID already (no wait, no poll).
  abi::LocalMadIn in{};
  in.ca.value = open.ca.value;
  in.port_num = 1;
  in.request[0] = 1;
  in.request[1] = 0x01;
  in.request[2] = 1;
  in.request[3] = 0x01;   // Get
  in.request[17] = 0x15;  // PortInfo
  abi::LocalMadOut got{};
  ASSERT_EQ(kernel::IbLocalMad(client.al(), in, got), Status::SUCCESS);
  in.request[3] = 0x02;  // Set
  std::memcpy(in.request + 64, got.response + 64, 64);
  in.request[64 + 16] = 0x02;  // LID 0x0234
  in.request[64 + 17] = 0x34;
  in.request[64 + 32] &= 0xF0;  // PortState, PortPhysicalState: no change
  in.request[64 + 33] &= 0x0F;
  ASSERT_EQ(kernel::IbLocalMad(client.al(), in, got), Status::SUCCESS);
  const abi::AsyncEventRecord event = NextAsync(client, client.al_handle());
  EXPECT_EQ(event.code, abi::AsyncEventType::LID_CHANGE);
  EXPECT_EQ(event.port_num, 1);
  ASSERT_TRUE(ca->CachedPortAttributes(1, &cached));
  EXPECT_EQ(cached.lid, 0x0234);

  // The CA leaves: its PORT_REMOVE still carries the port's GUID and last attributes (from
  // the cache, the CA being gone), and the cache answers nothing for a removed CA.
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(client.RegisterPnp(
                {{client.al_handle()}, abi::PnpClass::PORT, abi::PnpRegFlags{}, 0x22}, &reg),
            Status::SUCCESS);
  for (;;) {
    if (NextPnp(client, reg.reg.value).event == abi::PnpEvent::REG_COMPLETE) break;
  }
  ASSERT_EQ(node->RemoveCa(guid), Status::SUCCESS);
  abi::PnpEventRecord removed{};
  for (int i = 0; i < 8 && removed.event != abi::PnpEvent::PORT_REMOVE; ++i) {
    removed = NextPnp(client, reg.reg.value);
  }
  ASSERT_EQ(removed.event, abi::PnpEvent::PORT_REMOVE);
  EXPECT_EQ(removed.guid, ports[0].port_guid);
  EXPECT_EQ(removed.port.lid, 0x0234);
  EXPECT_FALSE(ca->CachedPortAttributes(1, &cached));
}

TEST_P(AlCiIrps, QpZeroAndOneOfEveryPortCameUpThroughTheirIrpChains) {
  std::unique_ptr<stack::NodeStack> node;
  {
    PendMode pend(GetParam());
    node = BootDefault(GetParam() ? "sqp-pend" : "sqp-inline");
  }
  ASSERT_TRUE(node);
  for (uint64_t guid : node->ca_guids()) {
    std::shared_ptr<al::AlCa> ca = node->access_layer()->FindCa(guid);
    ASSERT_TRUE(ca);
    ASSERT_EQ(ca->special_qps.size(), 2u);  // one port: QP0, QP1
    ASSERT_EQ(ca->special_qp_status.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(ca->special_qp_status[i], Status::SUCCESS) << i;
      EXPECT_EQ(ca->special_qps[i]->port(), 1);
      EXPECT_EQ(ca->special_qps[i]->smi(), i == 0);
      EXPECT_NE(ca->special_qps[i]->cq(), 0u);
    }
  }
  // The CAs leave with the node: their QPs' release IRPs complete before the stack goes
  // (a leak or a wait that never ends would fail or hang the node's shutdown).
  node.reset();
}

// ---- Destroys in two phases (issue 17): the release is a CI IRP, the verb waits for it ----

// A device put between the AL and a CA device (as AlCa::lower) that holds the CI IRPs
// with the given IOCTL codes until the test lets them go on to the CA: the order of a
// destroy verb and its release IRP becomes observable whatever the HCA's mode. Every other
// CI IRP (the node's own MAD and port-cache traffic goes on beside the test) passes at once.
class CiIrpHolder {
 public:
  CiIrpHolder(kernel::Node* node, kernel::DeviceObject* ca_device, std::vector<uint32_t> codes)
      : ca_device_(ca_device), codes_(std::move(codes)) {
    EXPECT_EQ(kernel::IoCreateDriver(node, "ci_irp_holder", &Init, this, &driver_),
              Status::SUCCESS);
    EXPECT_EQ(kernel::IoCreateDevice(driver_, 0, nullptr, 0, &device_), Status::SUCCESS);
    // The holder always skips its own stack location, so an IRP sized for the CA device is
    // enough: the AL may have built one for the CA just before the test put the holder in.
    device_->StackSize = ca_device->StackSize;
  }
  ~CiIrpHolder() {
    kernel::IoDeleteDevice(device_);
    kernel::IoUnloadDriver(driver_);
  }
  kernel::DeviceObject* device() const { return device_; }
  std::size_t held() {
    kernel::SpinLockGuard guard(lock_);
    return held_.size();
  }
  // The IOCTL code of the oldest IRP held (0: none).
  uint32_t oldest_code() {
    kernel::SpinLockGuard guard(lock_);
    if (held_.empty()) return 0;
    return kernel::IoGetCurrentIrpStackLocation(held_.front())
        ->Parameters.DeviceIoControl.IoControlCode;
  }
  // Lets the oldest IRP go on to the CA device.
  void ReleaseOne() {
    kernel::Irp* irp;
    {
      kernel::SpinLockGuard guard(lock_);
      ASSERT_FALSE(held_.empty());
      irp = held_.front();
      held_.erase(held_.begin());
    }
    kernel::IoSkipCurrentIrpStackLocation(irp);
    kernel::IoCallDriver(ca_device_, irp);
  }

 private:
  static Status Init(kernel::DriverObject* driver, void* context) {
    driver->DriverExtension = context;
    driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kInternalDeviceControl)] = &Hold;
    driver->Unload = [](kernel::DriverObject*) {};
    return Status::SUCCESS;
  }
  static Status Hold(kernel::DeviceObject* device, kernel::Irp* irp) {
    auto* self = static_cast<CiIrpHolder*>(device->DriverObject->DriverExtension);
    const uint32_t code =
        kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl.IoControlCode;
    if (std::find(self->codes_.begin(), self->codes_.end(), code) == self->codes_.end()) {
      kernel::IoSkipCurrentIrpStackLocation(irp);
      return kernel::IoCallDriver(self->ca_device_, irp);
    }
    kernel::IoMarkIrpPending(irp);
    kernel::SpinLockGuard guard(self->lock_);
    self->held_.push_back(irp);
    return Status::PENDING;
  }

  kernel::DeviceObject* const ca_device_;
  const std::vector<uint32_t> codes_;
  kernel::DriverObject* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
  kernel::KSpinLock lock_;
  std::vector<kernel::Irp*> held_;
};

// What a destroy verb's completion routine saw.
struct DestroySeen {
  kernel::KEvent done{kernel::EventType::kNotification};
  Status status = Status::UNKNOWN_ERROR;
  abi::ObjectCounts counts{};  // the node's live objects then
  al::AccessLayer* al = nullptr;
};

kernel::CompletionAction OnDestroyDone(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
  auto* seen = static_cast<DestroySeen*>(context);
  seen->status = irp->IoStatus.Status;
  seen->counts = al::QueryNodeObjectCounts(seen->al);
  seen->done.Set();
  return kernel::CompletionAction::kContinueCompletion;
}

// Sends a destroy verb IRP a Build<Verb>Irp made; returns what IoCallDriver answered.
Status SendDestroy(kernel::IbAl* al, kernel::Irp* irp, DestroySeen* seen) {
  kernel::IoSetCompletionRoutine(irp, &OnDestroyDone, seen, true, true, true);
  return kernel::IoCallDriver(kernel::IbGetAlDevice(al), irp);
}

// The HCA's own answer about a QP number (a CI IRP to the CA device, below the AL).
Status HcaQueryQp(stack::NodeStack* node, uint64_t guid, uint32_t qpn) {
  kernel::DeviceObject* device =
      kernel::IoGetDeviceByName(node->node(), node->ca_device_name(guid).c_str());
  if (device == nullptr) return Status::NOT_FOUND;
  abi::CiQueryQpOut out{};
  const Status s =
      kernel::CallCiQueryQpIrp(device, nullptr, kernel::ProcessorMode::kKernelMode, {qpn}, &out);
  kernel::ObDereferenceObject(device);
  return s;
}

TEST_P(AlCiIrps, ADestroyVerbCompletesOnlyAfterItsCiReleaseIrp) {
  std::unique_ptr<stack::NodeStack> node;
  {
    PendMode pend(GetParam());
    node = BootDefault(GetParam() ? "release-pend" : "release-inline");
  }
  ASSERT_TRUE(node);
  const uint64_t guid = node->ca_guids()[0];
  al::AccessLayer* access_layer = node->access_layer();
  std::shared_ptr<al::AlCa> ca_state = access_layer->FindCa(guid);
  ASSERT_TRUE(ca_state);
  const abi::ObjectCounts before = al::QueryNodeObjectCounts(access_layer);
  Client client(node->node());
  kernel::IbAl* al = client.al();
  abi::OpenCaOut ca{};
  ASSERT_EQ(kernel::IbOpenCa(al, {{client.al_handle()}, htobe64(guid), 0}, ca), Status::SUCCESS);
  abi::AllocPdOut pd{};
  ASSERT_EQ(kernel::IbAllocPd(al, {{ca.ca.value}, abi::PdType{}, 0, 0}, pd), Status::SUCCESS);
  abi::CreateCqOut cq{};
  ASSERT_EQ(kernel::IbCreateCq(al, {{ca.ca.value}, 16, 0, 0}, cq), Status::SUCCESS);
  abi::CreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::RC;
  qp_in.params.caps = {4, 4, 1, 1, 0, 0};
  abi::CreateQpOut qp{};
  ASSERT_EQ(kernel::IbCreateQp(al, qp_in, qp), Status::SUCCESS);
  EXPECT_EQ(HcaQueryQp(node.get(), guid, qp.qp_num), Status::SUCCESS);
  // The rules stay: a CQ a QP uses and a PD with children answer busy.
  EXPECT_EQ(kernel::IbDestroyCq(al, {cq.cq}), Status::RESOURCE_BUSY);
  EXPECT_EQ(kernel::IbDeallocPd(al, {pd.pd}), Status::RESOURCE_BUSY);

  // From here the AL's CI IRPs wait in the holder until the test lets them go.
  kernel::DeviceObject* ca_device = ca_state->lower;
  CiIrpHolder holder(node->node(), ca_device,
                     {abi::CiDestroyQpVerb::kIoctlCode, abi::CiDestroyCqVerb::kIoctlCode});
  ca_state->lower = holder.device();
  {
    DestroySeen seen;
    seen.al = access_layer;
    kernel::Irp* irp =
        kernel::BuildDestroyQpIrp(kernel::IbGetAlDevice(al), kernel::IbGetAlFile(al), {qp.qp});
    ASSERT_NE(irp, nullptr);
    EXPECT_EQ(SendDestroy(al, irp, &seen), Status::PENDING);
    // The handle is gone at once; the QP's release IRP is out, the verb waits for it, the
    // object lives on, and its CQ and PD stay busy (the HCA would refuse their releases).
    ASSERT_EQ(holder.held(), 1u);
    EXPECT_EQ(holder.oldest_code(), abi::CiDestroyQpVerb::kIoctlCode);
    EXPECT_EQ(kernel::KeWaitForSingleObject(&seen.done, std::chrono::milliseconds(20)),
              Status::TIMEOUT);
    EXPECT_EQ(al::QueryNodeObjectCounts(access_layer).qp, before.qp + 1);
    EXPECT_EQ(kernel::IbDestroyQp(al, {qp.qp}), Status::INVALID_QP_HANDLE);
    EXPECT_EQ(kernel::IbDestroyCq(al, {cq.cq}), Status::RESOURCE_BUSY);
    EXPECT_EQ(kernel::IbDeallocPd(al, {pd.pd}), Status::RESOURCE_BUSY);
    EXPECT_EQ(HcaQueryQp(node.get(), guid, qp.qp_num), Status::SUCCESS);
    holder.ReleaseOne();  // the HCA completes it (pend mode: later, from its DPC)
    ASSERT_EQ(kernel::KeWaitForSingleObject(&seen.done, std::chrono::seconds(10)), Status::SUCCESS);
    EXPECT_EQ(seen.status, Status::SUCCESS);
    EXPECT_EQ(seen.counts.qp, before.qp);  // freed before the verb completed
    EXPECT_EQ(HcaQueryQp(node.get(), guid, qp.qp_num), Status::INVALID_QP_HANDLE);
  }
  {
    DestroySeen seen;
    seen.al = access_layer;
    kernel::Irp* irp =
        kernel::BuildDestroyCqIrp(kernel::IbGetAlDevice(al), kernel::IbGetAlFile(al), {cq.cq});
    ASSERT_NE(irp, nullptr);
    EXPECT_EQ(SendDestroy(al, irp, &seen), Status::PENDING);  // the QP's uses are gone
    ASSERT_EQ(holder.held(), 1u);
    EXPECT_EQ(holder.oldest_code(), abi::CiDestroyCqVerb::kIoctlCode);
    EXPECT_EQ(kernel::KeWaitForSingleObject(&seen.done, std::chrono::milliseconds(20)),
              Status::TIMEOUT);
    holder.ReleaseOne();
    ASSERT_EQ(kernel::KeWaitForSingleObject(&seen.done, std::chrono::seconds(10)), Status::SUCCESS);
    EXPECT_EQ(seen.status, Status::SUCCESS);
    EXPECT_EQ(seen.counts.cq, before.cq);
  }
  ca_state->lower = ca_device;
  EXPECT_EQ(holder.held(), 0u);
  // The PD lost its last child when the QP's release completed: it goes at once.
  EXPECT_EQ(kernel::IbDeallocPd(al, {pd.pd}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDeallocPd(al, {pd.pd}), Status::INVALID_PD_HANDLE);
  EXPECT_EQ(kernel::IbCloseCa(al, {ca.ca}), Status::SUCCESS);
  const abi::ObjectCounts after = al::QueryNodeObjectCounts(access_layer);
  EXPECT_EQ(after.pd, before.pd);
  EXPECT_EQ(after.ca, before.ca);
}

// The object API's IbOpenCa fills IB_CA from a QueryCa it chains as a real IRP in the
// OpenCa's completion (nothing waits there): with the CI IRPs held, the call pends on the
// QueryCa's CiQueryCa and completes once the CA answered.
TEST_P(AlCiIrps, IbOpenCaChainsItsQueryCaAsAnIrp) {
  std::unique_ptr<stack::NodeStack> node;
  {
    PendMode pend(GetParam());
    node = BootDefault(GetParam() ? "openca-pend" : "openca-inline");
  }
  ASSERT_TRUE(node);
  const uint64_t guid = node->ca_guids()[0];
  std::shared_ptr<al::AlCa> ca_state = node->access_layer()->FindCa(guid);
  ASSERT_TRUE(ca_state);
  Client client(node->node());
  kernel::DeviceObject* ca_device = ca_state->lower;
  CiIrpHolder holder(node->node(), ca_device, {abi::CiQueryCaVerb::kIoctlCode});
  ca_state->lower = holder.device();

  struct Seen {
    kernel::KEvent done{kernel::EventType::kNotification};
    Status status = Status::UNKNOWN_ERROR;
    uint64_t information = 0;
  } seen;
  kernel::Irp* irp = kernel::IoAllocateIrp(1);
  ASSERT_NE(irp, nullptr);
  kernel::IoSetCompletionRoutine(
      irp,
      [](kernel::DeviceObject*, kernel::Irp* done, void* context) {
        auto* s = static_cast<Seen*>(context);
        s->status = done->IoStatus.Status;
        s->information = done->IoStatus.Information;
        s->done.Set();
        return kernel::CompletionAction::kMoreProcessingRequired;
      },
      &seen, true, true, true);
  kernel::IB_CA_CREATE create;
  create.ca_guid = htobe64(guid);
  create.context = 0x77;
  EXPECT_EQ(kernel::IbOpenCa(client.al(), &create, irp), Status::PENDING);
  ASSERT_EQ(holder.held(), 1u);
  EXPECT_EQ(holder.oldest_code(), abi::CiQueryCaVerb::kIoctlCode);
  EXPECT_EQ(kernel::KeWaitForSingleObject(&seen.done, std::chrono::milliseconds(20)),
            Status::TIMEOUT);
  holder.ReleaseOne();
  ASSERT_EQ(kernel::KeWaitForSingleObject(&seen.done, std::chrono::seconds(10)), Status::SUCCESS);
  kernel::IoFreeIrp(irp);
  ca_state->lower = ca_device;
  EXPECT_EQ(seen.status, Status::SUCCESS);
  auto* ca = reinterpret_cast<kernel::IB_CA*>(seen.information);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->guid, htobe64(guid));
  EXPECT_EQ(ca->context, 0x77u);
  EXPECT_EQ(ca->num_ports, 1u);  // from the QueryCa
  EXPECT_EQ(kernel::IbCallAndWait([&](kernel::Irp* close) { return kernel::IbCloseCa(ca, close); }),
            Status::SUCCESS);
}

// A user process's file closed with a QP, its CQ, an MR, an AV and their PD live: the
// cleanup destroys them children first, each parent once its children's release IRPs
// completed (in pend mode all of them complete later, from a DPC), and completes when the
// last one did; nothing is left in the AL or the HCA.
TEST_P(AlCiIrps, AUserFileClosedWithLiveObjectsLeavesNoneBehind) {
  std::unique_ptr<stack::NodeStack> node;
  {
    PendMode pend(GetParam());
    node = BootDefault(GetParam() ? "close-pend" : "close-inline");
  }
  ASSERT_TRUE(node);
  const uint64_t guid = node->ca_guids()[0];
  al::AccessLayer* access_layer = node->access_layer();
  const abi::ObjectCounts before = al::QueryNodeObjectCounts(access_layer);
  kernel::FileObject* file = nullptr;
  ASSERT_EQ(kernel::IoCreateFileForProcess(node->node(), node->ca_device_name(guid).c_str(),
                                           getpid(), &file),
            Status::SUCCESS);
  auto ioctl = [file](uint32_t code, const auto& in, auto* out) {
    uint64_t information = 0;
    return kernel::IoDeviceIoControlFile(file, code, &in, sizeof(in), out, sizeof(*out),
                                         kernel::ProcessorMode::kUserMode, &information);
  };
  abi::GetFileAlOut file_al{};
  ASSERT_EQ(ioctl(abi::GetFileAlVerb::kIoctlCode, abi::GetFileAlIn{0}, &file_al), Status::SUCCESS);
  abi::OpenCaOut ca{};
  ASSERT_EQ(ioctl(abi::OpenCaVerb::kIoctlCode, abi::OpenCaIn{file_al.al, htobe64(guid), 0}, &ca),
            Status::SUCCESS);
  abi::AllocPdOut pd{};
  ASSERT_EQ(ioctl(abi::AllocPdVerb::kIoctlCode, abi::AllocPdIn{ca.ca, abi::PdType{}, 0, 0}, &pd),
            Status::SUCCESS);
  abi::CreateCqOut cq{};
  ASSERT_EQ(ioctl(abi::CreateCqVerb::kIoctlCode, abi::CreateCqIn{ca.ca, 16, 0, 0}, &cq),
            Status::SUCCESS);
  std::vector<uint8_t> memory(4096, 0);
  abi::RegMemIn reg{};
  reg.pd = pd.pd;
  reg.region.vaddr = reinterpret_cast<uint64_t>(memory.data());
  reg.region.length = memory.size();
  reg.region.access = abi::AccessFlags::LOCAL_WRITE;
  abi::RegMemOut mr{};
  ASSERT_EQ(ioctl(abi::RegMemVerb::kIoctlCode, reg, &mr), Status::SUCCESS);
  abi::CreateAvIn av_in{};
  av_in.pd = pd.pd;
  av_in.attributes.port_num = 1;
  av_in.attributes.dlid = 1;
  abi::CreateAvOut av{};
  ASSERT_EQ(ioctl(abi::CreateAvVerb::kIoctlCode, av_in, &av), Status::SUCCESS);
  abi::CreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::RC;
  qp_in.params.caps = {4, 4, 1, 1, 0, 0};
  abi::CreateQpOut qp{};
  ASSERT_EQ(ioctl(abi::CreateQpVerb::kIoctlCode, qp_in, &qp), Status::SUCCESS);
  const abi::ObjectCounts live = al::QueryNodeObjectCounts(access_layer);
  EXPECT_EQ(live.qp, before.qp + 1);
  EXPECT_EQ(live.mr, before.mr + 1);
  EXPECT_EQ(live.av, before.av + 1);
  EXPECT_EQ(HcaQueryQp(node.get(), guid, qp.qp_num), Status::SUCCESS);

  kernel::IoCloseFile(file);  // cleanup, then close: returns once both completed
  const abi::ObjectCounts after = al::QueryNodeObjectCounts(access_layer);
  EXPECT_EQ(after.al, before.al);
  EXPECT_EQ(after.ca, before.ca);
  EXPECT_EQ(after.pd, before.pd);
  EXPECT_EQ(after.av, before.av);
  EXPECT_EQ(after.cq, before.cq);
  EXPECT_EQ(after.qp, before.qp);
  EXPECT_EQ(after.mr, before.mr);
  EXPECT_EQ(after.open_files, before.open_files);
  EXPECT_EQ(HcaQueryQp(node.get(), guid, qp.qp_num), Status::INVALID_QP_HANDLE);
}

INSTANTIATE_TEST_SUITE_P(InlineAndPended, AlCiIrps, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Pended" : "Inline"; });

}  // namespace
}  // namespace softib::testing
