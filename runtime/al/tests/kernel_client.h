// A kernel client of the AL for tests: it opens the AL for a device of its own and makes
// verb calls by direct call or through IRPs (the same handles either way), plus helpers
// that bring an RC QP pair up between two CAs cabled back to back.
#pragma once

#include <endian.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "kernel/runtime_ioctls_direct.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_mr_mw_direct.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/stack/node_stack.h"

namespace softib::testing {

using kernel::Status;

enum class Path { kDirect, kIrp };

// A driver with one device: the client the AL holds a reference on.
class ClientDevice {
 public:
  explicit ClientDevice(kernel::Node* node) {
    EXPECT_EQ(kernel::IoCreateDriver(node, "test_client", &Init, nullptr, &driver_),
              Status::SUCCESS);
    EXPECT_EQ(kernel::IoCreateDevice(driver_, 0, nullptr, 0, &device_), Status::SUCCESS);
  }
  ~ClientDevice() {
    kernel::IoDeleteDevice(device_);
    kernel::IoUnloadDriver(driver_);
  }
  kernel::DeviceObject* device() const { return device_; }

 private:
  static Status Init(kernel::DriverObject* driver, void*) {
    driver->Unload = [](kernel::DriverObject*) {};
    return Status::SUCCESS;
  }
  kernel::DriverObject* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
};

struct Side {
  uint64_t ca = 0, pd = 0, cq = 0, qp = 0, mr = 0;
  uint32_t qpn = 0, key = 0;
  uint16_t lid = 0;
  std::vector<uint8_t> buffer;
  uint64_t addr(uint64_t offset = 0) const {
    return reinterpret_cast<uint64_t>(buffer.data()) + offset;
  }
};

class Client {
 public:
  Client(kernel::Node* node, Path path = Path::kDirect) : device_(node), path_(path) {
    EXPECT_EQ(kernel::IbOpenAl(node, device_.device(), &al_), Status::SUCCESS);
  }
  ~Client() { Release(); }
  void Release() {
    if (al_ != nullptr) kernel::IbReleaseAl(std::exchange(al_, nullptr));
  }

  kernel::IbAl* al() const { return al_; }
  uint64_t al_handle() const { return kernel::IbGetAlHandle(al_); }
  void set_path(Path path) { path_ = path; }

  // ---- verbs by the chosen path ----
#define SOFTIB_VERB_OUT(Verb)                                                                      \
  Status Verb(const abi::Verb##In& in, abi::Verb##Out* out) {                                      \
    if (path_ == Path::kDirect) return kernel::Ib##Verb(al_, in, *out);                            \
    return kernel::Call##Verb##Irp(kernel::IbGetAlDevice(al_), kernel::IbGetAlFile(al_), in, out); \
  }
#define SOFTIB_VERB(Verb)                                                                     \
  Status Verb(const abi::Verb##In& in) {                                                      \
    if (path_ == Path::kDirect) return kernel::Ib##Verb(al_, in);                             \
    return kernel::Call##Verb##Irp(kernel::IbGetAlDevice(al_), kernel::IbGetAlFile(al_), in); \
  }
  SOFTIB_VERB_OUT(OpenCa)
  SOFTIB_VERB(CloseCa)
  SOFTIB_VERB_OUT(AllocPd)
  SOFTIB_VERB(DeallocPd)
  SOFTIB_VERB_OUT(CreateCq)
  SOFTIB_VERB(DestroyCq)
  SOFTIB_VERB_OUT(RegMem)
  SOFTIB_VERB(DeregMr)
  SOFTIB_VERB_OUT(CreateQp)
  SOFTIB_VERB_OUT(QueryQp)
  SOFTIB_VERB(ModifyQp)
  SOFTIB_VERB(DestroyQp)
  SOFTIB_VERB_OUT(RegisterPnp)
  SOFTIB_VERB(DeregisterPnp)
#undef SOFTIB_VERB_OUT
#undef SOFTIB_VERB

  Status QueryCa(uint64_t ca, abi::QueryCaOut* out, std::vector<abi::PortAttributes>* ports) {
    ports->assign(4, abi::PortAttributes{});
    return kernel::IbQueryCa(al_, abi::QueryCaIn{{ca}}, *out, *ports);
  }

  std::vector<uint64_t> CaGuids() {
    std::vector<uint64_t> guids(abi::kMaxCas);
    abi::GetCaGuidsOut out{};
    EXPECT_EQ(kernel::IbGetCaGuids(al_, abi::GetCaGuidsIn{{al_handle()}}, out, guids),
              Status::SUCCESS);
    guids.resize(out.num_cas);
    for (auto& g : guids) g = be64toh(g);
    return guids;
  }

  // CA, PD, CQ, MR over a fresh buffer, QP in RESET.
  void Build(uint64_t guid, uint16_t lid, Side* s, abi::QpType type = abi::QpType::RC,
             std::size_t bytes = 1 << 16) {
    s->lid = lid;
    s->buffer.assign(bytes, 0);
    abi::OpenCaOut ca{};
    ASSERT_EQ(OpenCa({{al_handle()}, htobe64(guid), 0x1111}, &ca), Status::SUCCESS);
    s->ca = ca.ca.value;
    abi::AllocPdOut pd{};
    ASSERT_EQ(AllocPd({{s->ca}, abi::PdType{}, 0, 0}, &pd), Status::SUCCESS);
    s->pd = pd.pd.value;
    abi::CreateCqOut cq{};
    ASSERT_EQ(CreateCq({{s->ca}, 256, 0, 0xC0FFEE}, &cq), Status::SUCCESS);
    EXPECT_GE(cq.actual_size, 256u);
    s->cq = cq.cq.value;
    abi::RegMemOut mr{};
    abi::RegMemIn reg{};
    reg.pd.value = s->pd;
    reg.region.vaddr = s->addr();
    reg.region.length = bytes;
    reg.region.access = abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE |
                        abi::AccessFlags::REMOTE_READ;
    ASSERT_EQ(RegMem(reg, &mr), Status::SUCCESS);
    s->mr = mr.mr.value;
    s->key = mr.lkey;
    abi::CreateQpIn qp_in{};
    qp_in.pd.value = s->pd;
    qp_in.send_cq.value = s->cq;
    qp_in.recv_cq.value = s->cq;
    qp_in.params.qp_type = type;
    qp_in.params.sq_signaled = 1;
    qp_in.params.caps = {64, 64, 4, 4, 0, 0};
    qp_in.context = 0x9999;
    abi::CreateQpOut qp{};
    ASSERT_EQ(CreateQp(qp_in, &qp), Status::SUCCESS);
    s->qp = qp.qp.value;
    s->qpn = qp.qp_num;
  }

  // RESET→INIT→RTR→RTS towards `peer`.
  void Connect(const Side& s, const Side& peer) {
    using M = abi::QpAttrMask;
    abi::ModifyQpIn in{};
    in.qp.value = s.qp;
    in.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
    in.attributes.state = abi::QpState::INIT;
    in.attributes.port_num = 1;
    in.attributes.access_flags = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ;
    ASSERT_EQ(ModifyQp(in), Status::SUCCESS);
    in.attributes = {};
    in.attributes.mask = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN |
                         M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER;
    in.attributes.state = abi::QpState::RTR;
    in.attributes.av.port_num = 1;
    in.attributes.av.dlid = peer.lid;
    in.attributes.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
    in.attributes.dest_qpn = peer.qpn;
    in.attributes.rq_psn = 0x100;
    in.attributes.max_dest_rd_atomic = 4;
    in.attributes.min_rnr_timer = 1;
    ASSERT_EQ(ModifyQp(in), Status::SUCCESS);
    in.attributes = {};
    in.attributes.mask =
        M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_COUNT | M::RNR_RETRY | M::MAX_RD_ATOMIC;
    in.attributes.state = abi::QpState::RTS;
    in.attributes.sq_psn = 0x100;
    in.attributes.timeout = 14;
    in.attributes.retry_count = 7;
    in.attributes.rnr_retry = 7;
    in.attributes.max_rd_atomic = 4;
    ASSERT_EQ(ModifyQp(in), Status::SUCCESS);
  }

  // Polls until `count` completions arrived (bounded: a lost completion fails the test).
  std::vector<abi::WorkCompletion> PollN(uint64_t cq, std::size_t count) {
    std::vector<abi::WorkCompletion> got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got.size() < count && std::chrono::steady_clock::now() < deadline) {
      abi::WorkCompletion wcs[16];
      uint32_t n = 0;
      const Status s = kernel::IbPollCq(al_, cq, wcs, &n);
      if (s == Status::NOT_FOUND) {
        kernel::KeDelayExecutionThread(std::chrono::microseconds(200));
        continue;
      }
      EXPECT_EQ(s, Status::SUCCESS);
      if (s != Status::SUCCESS) break;
      got.insert(got.end(), wcs, wcs + n);
    }
    return got;
  }

 private:
  ClientDevice device_;
  Path path_;
  kernel::IbAl* al_ = nullptr;
};

inline abi::SendWorkRequest Write(const Side& from, uint64_t offset, uint32_t length,
                                  const Side& to, uint64_t remote_offset, uint64_t wr_id) {
  abi::SendWorkRequest wr{};
  wr.wr_id = wr_id;
  wr.wr_type = abi::WrType::RDMA_WRITE;
  wr.num_sge = 1;
  wr.sge[0] = {from.addr(offset), length, from.key};
  wr.rkey = to.key;
  wr.remote_addr = to.addr(remote_offset);
  return wr;
}

inline abi::SendWorkRequest Send(const Side& from, uint64_t offset, uint32_t length,
                                 uint64_t wr_id) {
  abi::SendWorkRequest wr{};
  wr.wr_id = wr_id;
  wr.wr_type = abi::WrType::SEND;
  wr.num_sge = 1;
  wr.sge[0] = {from.addr(offset), length, from.key};
  return wr;
}

inline abi::RecvWorkRequest Recv(const Side& on, uint64_t offset, uint32_t length, uint64_t wr_id) {
  abi::RecvWorkRequest wr{};
  wr.wr_id = wr_id;
  wr.num_sge = 1;
  wr.sge[0] = {on.addr(offset), length, on.key};
  return wr;
}

inline void Pattern(std::vector<uint8_t>& b, uint64_t offset, uint32_t length, uint32_t seed) {
  for (uint32_t i = 0; i < length; ++i) b[offset + i] = static_cast<uint8_t>(seed * 31 + i * 7);
}

inline bool HasPattern(const std::vector<uint8_t>& b, uint64_t offset, uint32_t length,
                       uint32_t seed) {
  for (uint32_t i = 0; i < length; ++i) {
    if (b[offset + i] != static_cast<uint8_t>(seed * 31 + i * 7)) return false;
  }
  return true;
}

// Watches an IRP built with Build<Verb>Irp: its routine claims the IRP back, copies the
// output out of the system buffer, then signals (the I/O manager would copy the output
// only after the routines ran, too late for a waiter woken by the routine).
struct IrpWatch {
  IrpWatch(kernel::Irp* irp_in, void* output, std::size_t output_size)
      : irp(irp_in), output_(output), output_size_(output_size) {
    kernel::IoSetCompletionRoutine(irp, &Done, this, true, true, true);
  }
  ~IrpWatch() { kernel::IoFreeIrp(irp); }
  bool WaitDone(std::chrono::seconds timeout = std::chrono::seconds(10)) {
    return kernel::KeWaitForSingleObject(&done, timeout) == Status::SUCCESS;
  }
  static kernel::CompletionAction Done(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
    auto* self = static_cast<IrpWatch*>(context);
    if (self->output_ != nullptr && irp->AssociatedIrp.SystemBuffer != nullptr) {
      std::memcpy(self->output_, irp->AssociatedIrp.SystemBuffer,
                  std::min<std::size_t>(self->output_size_, irp->IoStatus.Information));
    }
    self->status = irp->IoStatus.Status;
    kernel::KeSetEvent(&self->done);
    return kernel::CompletionAction::kMoreProcessingRequired;
  }
  kernel::Irp* irp;
  std::atomic<Status> status{Status::PENDING};
  kernel::KEvent done{kernel::EventType::kNotification};

 private:
  void* output_;
  std::size_t output_size_;
};

// A booted default node (two CAs cabled back to back).
// A UD (or MAD) QP of port 1 brought RESET -> INIT (P_Key index 0, `qkey`) -> RTR -> RTS.
inline void BringUpUd(Client& client, uint64_t qp, uint32_t qkey) {
  using M = abi::QpAttrMask;
  abi::ModifyQpIn in{};
  in.qp.value = qp;
  in.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
  in.attributes.state = abi::QpState::INIT;
  in.attributes.port_num = 1;
  in.attributes.qkey = htobe32(qkey);
  ASSERT_EQ(client.ModifyQp(in), Status::SUCCESS);
  in.attributes = {};
  in.attributes.mask = M::STATE;
  in.attributes.state = abi::QpState::RTR;
  ASSERT_EQ(client.ModifyQp(in), Status::SUCCESS);
  in.attributes.mask = M::STATE | M::SQ_PSN;
  in.attributes.state = abi::QpState::RTS;
  ASSERT_EQ(client.ModifyQp(in), Status::SUCCESS);
}

inline std::unique_ptr<stack::NodeStack> BootDefault(const char* name) {
  stack::NodeConfig config;
  config.name = name;
  Status status;
  auto node = stack::NodeStack::Boot(config, &status);
  EXPECT_EQ(status, Status::SUCCESS);
  return node;
}

// An IRP a kernel client hands to a direct call, and the event its completion sets.
struct PendingCall {
  PendingCall() : irp(kernel::IoAllocateIrp(1)) {
    kernel::IoSetCompletionRoutine(irp, &Done, this, true, true, true);
  }
  ~PendingCall() { kernel::IoFreeIrp(irp); }
  PendingCall(const PendingCall&) = delete;
  PendingCall& operator=(const PendingCall&) = delete;
  bool WaitDone() {
    return kernel::KeWaitForSingleObject(&done, std::chrono::seconds(10)) == Status::SUCCESS;
  }
  static kernel::CompletionAction Done(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
    auto* self = static_cast<PendingCall*>(context);
    self->status = irp->IoStatus.Status;
    kernel::KeSetEvent(&self->done);
    return kernel::CompletionAction::kMoreProcessingRequired;  // ours to free
  }
  kernel::Irp* irp;
  kernel::KEvent done{kernel::EventType::kNotification};
  std::atomic<Status> status{Status::PENDING};
};

// Issues an event wait (`get(irp)` returns its direct call's status) and waits for it if it
// pends: the event must come, successfully.
template <typename Get>
void WaitForEvent(Get get) {
  PendingCall call;
  const Status s = get(call.irp);
  if (s == Status::PENDING) {
    EXPECT_TRUE(call.WaitDone());
    EXPECT_EQ(call.status.load(), Status::SUCCESS);
  } else {
    EXPECT_EQ(s, Status::SUCCESS);
  }
}

// The next PnP record of registration `reg`, waiting for it if none is queued.
inline abi::PnpEventRecord NextPnp(Client& client, uint64_t reg) {
  abi::GetPnpEventOut out{};
  WaitForEvent(
      [&](kernel::Irp* irp) { return kernel::IbGetPnpEvent(client.al(), {{reg}}, out, irp); });
  return out.record;
}

// The next asynchronous event of AL handle `al`.
inline abi::AsyncEventRecord NextAsync(Client& client, uint64_t al) {
  abi::GetAsyncEventOut out{};
  WaitForEvent(
      [&](kernel::Irp* irp) { return kernel::IbGetAsyncEvent(client.al(), {{al}}, out, irp); });
  return out.record;
}

}  // namespace softib::testing
