// Control-path rate of a kernel client (issue 17): one round is CreateQp (RC) → ModifyQp
// RESET→INIT → INIT→RTR (looped back to itself: its own port's LID and its own QPN) →
// RTR→RTS → DestroyQp, issued by a kernel client of an in-process node (the two-CA node
// NodeStack boots) that opened the AL, one CA, a PD and two CQs first.
//
// Rows, measured in the same run and interleaved (passes of each in turn, the median pass
// reported, the fastest in brackets):
//   device  — the floor: the same five operations straight on a software HCA device object
//             (hca/device's Hca: CreateQp, ModifyQp ×3, DestroyQp with the same attributes),
//             no emulated kernel, no driver, no Access Layer. Issue 17 changes how the AL
//             reaches the HCA driver (a C++ interface today, IRPs after), not the device, so
//             this bounds from below what the layers above it cost, before and after.
//   null IRP — a second reference: one IOCTL IRP built (IoBuildDeviceIoControlRequest),
//             sent (IoCallDriver) to a driver that completes it at once, and waited for —
//             the emulated kernel's cost per IRP, which the change adds five of per round.
//   direct  — the round through the generated direct calls (IbCreateQp, IbModifyQp,
//             IbDestroyQp).
//   irp     — the same round through the generated IRP path (Call<Verb>Irp to the AL device
//             on the client's kernel-mode file).
//   object  — the same round through the kernel object API over public structures
//             (IbCreateQp(IB_PD*, IB_QP_CREATE*, Irp*), IbModifyQp(IB_QP*, ...),
//             IbDestroyQp(IB_QP*, Irp*)), each call on an IRP of the client's with
//             IbCallAndWait. The set-up (CA, PD, CQs) is made with that API too.
// The QP count of the node's AL must come back to where it was (no leak).
//
//   softib_bench_control_path [rounds (20000)] [passes (5)]
#include <endian.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "hca/device/hca.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_ca_ib.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_cq_ib.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_pd_av_ib.h"
#include "kernel/verbs_qp_direct.h"
#include "kernel/verbs_qp_ib.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/io.h"
#include "softib/kernel/object_call.h"
#include "softib/stack/node_stack.h"

namespace softib::bench {
namespace {

using kernel::Irp;
using kernel::Status;
using M = abi::QpAttrMask;
constexpr const char* kProgram = "softib_bench_control_path";

void Check(Status s, const char* what) {
  if (s != Status::SUCCESS)
    Die(kProgram, std::string(what) + ": status " + std::to_string(static_cast<int>(s)));
}

abi::QpCreateParams RcParams() {
  abi::QpCreateParams p{};
  p.qp_type = abi::QpType::RC;
  p.sq_signaled = 1;
  p.caps = {16, 16, 1, 1, 0, 0};
  return p;
}

// The three transitions, with the attributes each requires (RTR towards `lid` and `qpn`).
abi::QpModifyAttributes ToInit() {
  abi::QpModifyAttributes a{};
  a.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
  a.state = abi::QpState::INIT;
  a.port_num = 1;
  a.access_flags = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ;
  return a;
}
abi::QpModifyAttributes ToRtr(uint16_t lid, uint32_t qpn) {
  abi::QpModifyAttributes a{};
  a.mask = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC |
           M::MIN_RNR_TIMER;
  a.state = abi::QpState::RTR;
  a.av.port_num = 1;
  a.av.dlid = lid;
  a.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  a.dest_qpn = qpn;
  a.rq_psn = 0x100;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  return a;
}
abi::QpModifyAttributes ToRts() {
  abi::QpModifyAttributes a{};
  a.mask = M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_COUNT | M::RNR_RETRY | M::MAX_RD_ATOMIC;
  a.state = abi::QpState::RTS;
  a.sq_psn = 0x100;
  a.timeout = 14;
  a.retry_count = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  return a;
}

// The floor: a software HCA device object of its own (one port, no link), no kernel.
class DeviceRound {
 public:
  DeviceRound() {
    pd_ = hca_.AllocPd();
    Check(hca_.CreateCq(64, &send_cq_), "device CreateCq");
    Check(hca_.CreateCq(64, &recv_cq_), "device CreateCq");
  }
  void Run(uint32_t rounds) {
    const abi::QpCreateParams params = RcParams();
    const abi::QpModifyAttributes init = ToInit(), rts = ToRts();
    for (uint32_t i = 0; i < rounds; ++i) {
      uint32_t qpn = 0;
      Check(hca_.CreateQp(pd_, params, send_cq_, recv_cq_, &qpn), "device CreateQp");
      Check(hca_.ModifyQp(qpn, init), "device ModifyQp INIT");
      Check(hca_.ModifyQp(qpn, ToRtr(1, qpn)), "device ModifyQp RTR");
      Check(hca_.ModifyQp(qpn, rts), "device ModifyQp RTS");
      Check(hca_.DestroyQp(qpn), "device DestroyQp");
    }
  }

 private:
  hca::Hca hca_;
  hca::PdId pd_ = 0;
  uint32_t send_cq_ = 0, recv_cq_ = 0;
};

// A driver whose device-control dispatch completes every IRP at once.
Status NullDispatch(kernel::DeviceObject*, Irp* irp) {
  irp->IoStatus.Status = Status::SUCCESS;
  irp->IoStatus.Information = 0;
  kernel::IoCompleteRequest(irp);
  return Status::SUCCESS;
}
Status NullInit(kernel::DriverObject* driver, void*) {
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kDeviceControl)] = &NullDispatch;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kInternalDeviceControl)] = &NullDispatch;
  driver->Unload = [](kernel::DriverObject*) {};
  return Status::SUCCESS;
}
Status ClientInit(kernel::DriverObject* driver, void*) {
  driver->Unload = [](kernel::DriverObject*) {};
  return Status::SUCCESS;
}

class Node {
 public:
  Node() {
    stack::NodeConfig config;
    config.name = "control-path-bench";
    Status status;
    node_ = stack::NodeStack::Boot(config, &status);
    Check(status, "boot");
    Check(
        kernel::IoCreateDriver(node_->node(), "control_path_bench", &ClientInit, nullptr, &driver_),
        "driver");
    Check(kernel::IoCreateDevice(driver_, 0, nullptr, 0, &device_), "device");
    Check(kernel::IbOpenAl(node_->node(), device_, &al_), "IbOpenAl");
    Check(kernel::IoCreateDriver(node_->node(), "control_path_null", &NullInit, nullptr,
                                 &null_driver_),
          "null driver");
    Check(kernel::IoCreateDevice(null_driver_, 0, nullptr, 0, &null_device_), "null device");

    kernel::IB_CA_CREATE ca_create;
    ca_create.ca_guid = htobe64(node_->ca_guids()[0]);
    Check(kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbOpenCa(al_, &ca_create, irp); },
                                  &ca_),
          "IbOpenCa");
    std::vector<abi::PortAttributes> ports(ca_->num_ports);
    abi::QueryCaOut q{};
    Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbQueryCa(ca_, &q, ports, irp); }),
          "IbQueryCa");
    lid_ = ports[0].lid;
    const kernel::IB_PD_CREATE pd_create;
    Check(kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbAllocPd(ca_, &pd_create, irp); },
                                  &pd_),
          "IbAllocPd");
    kernel::IB_CQ_CREATE cq_create;
    cq_create.size = 64;
    Check(kernel::IbCreateAndWait(
              [&](Irp* irp) { return kernel::IbCreateCq(ca_, &cq_create, irp); }, &send_cq_),
          "IbCreateCq");
    Check(kernel::IbCreateAndWait(
              [&](Irp* irp) { return kernel::IbCreateCq(ca_, &cq_create, irp); }, &recv_cq_),
          "IbCreateCq");
  }
  ~Node() {
    for (kernel::IB_CQ* cq : {send_cq_, recv_cq_}) {
      Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbDestroyCq(cq, irp); }),
            "IbDestroyCq");
    }
    Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbDeallocPd(pd_, irp); }),
          "IbDeallocPd");
    Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbCloseCa(ca_, irp); }),
          "IbCloseCa");
    kernel::IbReleaseAl(al_);
    kernel::IoDeleteDevice(device_);
    kernel::IoUnloadDriver(driver_);
    kernel::IoDeleteDevice(null_device_);
    kernel::IoUnloadDriver(null_driver_);
  }

  uint32_t Qps() { return al::QueryNodeObjectCounts(node_->access_layer()).qp; }

  void RunNullIrps(uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      Irp* irp = kernel::IoBuildDeviceIoControlRequest(0x22A000, null_device_, nullptr, 0, nullptr,
                                                       0, true);
      if (irp == nullptr) Die(kProgram, "IoBuildDeviceIoControlRequest failed");
      Check(kernel::IoCallDriverAndWait(null_device_, irp), "null IRP");
    }
  }

  void RunDirect(uint32_t rounds) {
    const abi::CreateQpIn create = CreateIn();
    for (uint32_t i = 0; i < rounds; ++i) {
      abi::CreateQpOut out{};
      Check(kernel::IbCreateQp(al_, create, out), "IbCreateQp");
      Check(kernel::IbModifyQp(al_, {out.qp, ToInit()}), "IbModifyQp INIT");
      Check(kernel::IbModifyQp(al_, {out.qp, ToRtr(lid_, out.qp_num)}), "IbModifyQp RTR");
      Check(kernel::IbModifyQp(al_, {out.qp, ToRts()}), "IbModifyQp RTS");
      Check(kernel::IbDestroyQp(al_, {out.qp}), "IbDestroyQp");
    }
  }

  void RunObject(uint32_t rounds) {
    kernel::IB_QP_CREATE create;
    create.send_cq = send_cq_;
    create.recv_cq = recv_cq_;
    create.params = RcParams();
    const abi::ModifyQpIn init{{}, ToInit()}, rts{{}, ToRts()};
    for (uint32_t i = 0; i < rounds; ++i) {
      kernel::IB_QP* qp = nullptr;
      Check(kernel::IbCreateAndWait([&](Irp* irp) { return kernel::IbCreateQp(pd_, &create, irp); },
                                    &qp),
            "IbCreateQp(IB_PD*)");
      const abi::ModifyQpIn rtr{{}, ToRtr(lid_, qp->qp_num)};
      for (const abi::ModifyQpIn* in : {&init, &rtr, &rts}) {
        Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbModifyQp(qp, *in, irp); }),
              "IbModifyQp(IB_QP*)");
      }
      Check(kernel::IbCallAndWait([&](Irp* irp) { return kernel::IbDestroyQp(qp, irp); }),
            "IbDestroyQp(IB_QP*)");
    }
  }

  void RunIrp(uint32_t rounds) {
    kernel::DeviceObject* target = kernel::IbGetAlDevice(al_);
    kernel::FileObject* file = kernel::IbGetAlFile(al_);
    const abi::CreateQpIn create = CreateIn();
    for (uint32_t i = 0; i < rounds; ++i) {
      abi::CreateQpOut out{};
      Check(kernel::CallCreateQpIrp(target, file, create, &out), "CallCreateQpIrp");
      Check(kernel::CallModifyQpIrp(target, file, {out.qp, ToInit()}), "CallModifyQpIrp INIT");
      Check(kernel::CallModifyQpIrp(target, file, {out.qp, ToRtr(lid_, out.qp_num)}),
            "CallModifyQpIrp RTR");
      Check(kernel::CallModifyQpIrp(target, file, {out.qp, ToRts()}), "CallModifyQpIrp RTS");
      Check(kernel::CallDestroyQpIrp(target, file, {out.qp}), "CallDestroyQpIrp");
    }
  }

 private:
  abi::CreateQpIn CreateIn() const {
    abi::CreateQpIn in{};
    in.pd.value = pd_->handle;
    in.send_cq.value = send_cq_->handle;
    in.recv_cq.value = recv_cq_->handle;
    in.params = RcParams();
    return in;
  }

  std::unique_ptr<stack::NodeStack> node_;
  kernel::DriverObject* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
  kernel::DriverObject* null_driver_ = nullptr;
  kernel::DeviceObject* null_device_ = nullptr;
  kernel::IbAl* al_ = nullptr;
  kernel::IB_CA* ca_ = nullptr;
  kernel::IB_PD* pd_ = nullptr;
  kernel::IB_CQ *send_cq_ = nullptr, *recv_cq_ = nullptr;
  uint16_t lid_ = 0;
};

// Nanoseconds per unit of each pass.
struct Series {
  std::vector<double> ns_per_unit;
  template <typename F>
  void Pass(uint32_t units, F&& run) {
    const uint64_t t0 = NowNs();
    run(units);
    ns_per_unit.push_back(static_cast<double>(NowNs() - t0) / units);
  }
};

}  // namespace
}  // namespace softib::bench

int main(int argc, char** argv) {
  using namespace softib::bench;
  const uint32_t rounds =
      argc > 1 ? static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10)) : 20000;
  const uint32_t passes = argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 5;
  if (rounds == 0 || passes == 0)
    Die(kProgram, "usage: softib_bench_control_path [rounds] [passes]");
  const uint32_t per_pass = std::max<uint32_t>(1, rounds / passes);

  DeviceRound device;
  Node node;
  const uint32_t qps_before = node.Qps();
  // One untimed round of each warms the tables and caches.
  device.Run(1);
  node.RunDirect(1);
  node.RunIrp(1);
  node.RunObject(1);
  node.RunNullIrps(5);
  Series floor, null_irp, direct, irp, object;
  for (uint32_t p = 0; p < passes; ++p) {
    floor.Pass(per_pass, [&](uint32_t n) { device.Run(n); });
    null_irp.Pass(per_pass * 5, [&](uint32_t n) { node.RunNullIrps(n); });
    direct.Pass(per_pass, [&](uint32_t n) { node.RunDirect(n); });
    irp.Pass(per_pass, [&](uint32_t n) { node.RunIrp(n); });
    object.Pass(per_pass, [&](uint32_t n) { node.RunObject(n); });
  }
  const uint32_t qps_after = node.Qps();

  std::printf(
      "Control path of a kernel client: CreateQp (RC) -> ModifyQp INIT, RTR, RTS -> DestroyQp\n"
      "  %u passes of %u rounds, interleaved; median pass (fastest in brackets)\n",
      passes, per_pass);
  const Summary f = Summarize(floor.ns_per_unit);
  std::printf("  device    %9.0f rounds/s  %8.2f us/round (%.2f)  floor: hca/device directly\n",
              1e9 / f.typical, f.typical / 1e3, f.min / 1e3);
  const Summary n = Summarize(null_irp.ns_per_unit);
  std::printf("  null IRP  %9.0f IRPs/s    %8.2f us/IRP   (%.2f)  build, IoCallDriver, wait\n",
              1e9 / n.typical, n.typical / 1e3, n.min / 1e3);
  for (const auto& [name, series] :
       {std::pair<const char*, Series*>{"direct", &direct}, {"irp", &irp}, {"object", &object}}) {
    const Summary s = Summarize(series->ns_per_unit);
    std::printf("  %-8s  %9.0f rounds/s  %8.2f us/round (%.2f)  %.2fx the device floor\n", name,
                1e9 / s.typical, s.typical / 1e3, s.min / 1e3, s.typical / f.typical);
  }
  if (qps_after != qps_before)
    Die(kProgram, "leak: QPs " + std::to_string(qps_before) + " -> " + std::to_string(qps_after));
  std::printf("  QPs %u -> %u (no leak)\n", qps_before, qps_after);
  return 0;
}
