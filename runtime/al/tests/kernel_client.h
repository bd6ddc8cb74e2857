// A kernel client of the AL for tests: it opens the AL for a device of its own and makes
// verb calls by direct call or through IRPs (the same handles either way), plus helpers
// that bring an RC QP pair up between two CAs cabled back to back.
//
// The direct path creates, queries, modifies and destroys CAs, PDs, CQs, MRs and QPs
// through the kernel object API over public structures (kernel/<module>_ib.h), as kernel
// clients do; the tests keep naming objects by handle (the IRP path and the speed path use
// handles), so the client maps each handle to the structure it got. A handle it does not
// know (another path's, a destroyed or a forged one), an SRQ, and any call at DISPATCH
// (where the object API's PASSIVE wait is not allowed) go to the handle-based direct call.
#pragma once

#include <endian.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel/runtime_ioctls_direct.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_ca_ib.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_cq_ib.h"
#include "kernel/verbs_mr_mw_direct.h"
#include "kernel/verbs_mr_mw_ib.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_pd_av_ib.h"
#include "kernel/verbs_qp_direct.h"
#include "kernel/verbs_qp_ib.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/object_call.h"
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

// The public structures a Client made, by handle.
template <typename Object>
class ObjectTable {
 public:
  ObjectTable() = default;
  ObjectTable(const ObjectTable&) = delete;
  ObjectTable& operator=(const ObjectTable&) = delete;
  ~ObjectTable() { FreeAll(); }
  Object* Find(uint64_t handle) const {
    const auto it = objects_.find(handle);
    return it == objects_.end() ? nullptr : it->second;
  }
  void Add(Object* object) { objects_[object->handle] = object; }
  void Remove(uint64_t handle) { objects_.erase(handle); }
  // After IbReleaseAl destroyed what was left.
  void FreeAll() {
    for (auto& [handle, object] : objects_) delete object;
    objects_.clear();
  }

 private:
  std::unordered_map<uint64_t, Object*> objects_;
};

class Client {
 public:
  Client(kernel::Node* node, Path path = Path::kDirect) : device_(node), path_(path) {
    EXPECT_EQ(kernel::IbOpenAl(node, device_.device(), &al_), Status::SUCCESS);
  }
  ~Client() { Release(); }
  void Release() {
    if (al_ != nullptr) kernel::IbReleaseAl(std::exchange(al_, nullptr));
    qps_.FreeAll();
    mrs_.FreeAll();
    cqs_.FreeAll();
    pds_.FreeAll();
    cas_.FreeAll();
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
  SOFTIB_VERB_OUT(RegisterPnp)
  SOFTIB_VERB(DeregisterPnp)
#undef SOFTIB_VERB_OUT
#undef SOFTIB_VERB

  // The public structure the direct path got for a CQ or QP handle (null: none).
  kernel::IB_CQ* cq_object(uint64_t cq) const { return cqs_.Find(cq); }
  kernel::IB_QP* qp_object(uint64_t qp) const { return qps_.Find(qp); }

  // ---- through the object API on the direct path (see the top of this file) ----
  Status OpenCa(const abi::OpenCaIn& in, abi::OpenCaOut* out) {
    if (!UseObjects() || in.al.value != al_handle()) return HandleOpenCa(in, out);
    kernel::IB_CA_CREATE create;
    create.ca_guid = in.ca_guid;
    create.context = in.context;
    kernel::IB_CA* ca = nullptr;
    const Status s =
        Create(cas_, &ca, [&](kernel::Irp* irp) { return kernel::IbOpenCa(al_, &create, irp); });
    *out = {};
    if (ca != nullptr) out->ca.value = ca->handle;
    return s;
  }
  Status CloseCa(const abi::CloseCaIn& in) {
    kernel::IB_CA* ca = UseObjects() ? cas_.Find(in.ca.value) : nullptr;
    if (ca == nullptr) return HandleCloseCa(in);
    return Destroy(cas_, ca, [&](kernel::Irp* irp) { return kernel::IbCloseCa(ca, irp); });
  }
  Status AllocPd(const abi::AllocPdIn& in, abi::AllocPdOut* out) {
    kernel::IB_CA* ca = UseObjects() ? cas_.Find(in.ca.value) : nullptr;
    if (ca == nullptr) return HandleAllocPd(in, out);
    kernel::IB_PD_CREATE create;
    create.type = in.type;
    create.context = in.context;
    kernel::IB_PD* pd = nullptr;
    const Status s =
        Create(pds_, &pd, [&](kernel::Irp* irp) { return kernel::IbAllocPd(ca, &create, irp); });
    *out = {};
    if (pd != nullptr) out->pd.value = pd->handle;
    return s;
  }
  Status DeallocPd(const abi::DeallocPdIn& in) {
    kernel::IB_PD* pd = UseObjects() ? pds_.Find(in.pd.value) : nullptr;
    if (pd == nullptr) return HandleDeallocPd(in);
    return Destroy(pds_, pd, [&](kernel::Irp* irp) { return kernel::IbDeallocPd(pd, irp); });
  }
  Status CreateCq(const abi::CreateCqIn& in, abi::CreateCqOut* out) {
    kernel::IB_CA* ca = UseObjects() ? cas_.Find(in.ca.value) : nullptr;
    if (ca == nullptr) return HandleCreateCq(in, out);
    kernel::IB_CQ_CREATE create;
    create.size = in.size;
    create.context = in.context;
    kernel::IB_CQ* cq = nullptr;
    const Status s =
        Create(cqs_, &cq, [&](kernel::Irp* irp) { return kernel::IbCreateCq(ca, &create, irp); });
    *out = {};
    if (cq != nullptr) {
      out->cq.value = cq->handle;
      out->actual_size = cq->size;
    }
    return s;
  }
  Status DestroyCq(const abi::DestroyCqIn& in) {
    kernel::IB_CQ* cq = UseObjects() ? cqs_.Find(in.cq.value) : nullptr;
    if (cq == nullptr) return HandleDestroyCq(in);
    return Destroy(cqs_, cq, [&](kernel::Irp* irp) { return kernel::IbDestroyCq(cq, irp); });
  }
  Status RegMem(const abi::RegMemIn& in, abi::RegMemOut* out) {
    kernel::IB_PD* pd = UseObjects() ? pds_.Find(in.pd.value) : nullptr;
    if (pd == nullptr) return HandleRegMem(in, out);
    kernel::IB_MR_CREATE create;
    create.region = in.region;
    kernel::IB_MR* mr = nullptr;
    const Status s =
        Create(mrs_, &mr, [&](kernel::Irp* irp) { return kernel::IbRegMem(pd, &create, irp); });
    *out = {};
    if (mr != nullptr) {
      out->mr.value = mr->handle;
      out->lkey = mr->lkey;
      out->rkey = mr->rkey;
    }
    return s;
  }
  Status DeregMr(const abi::DeregMrIn& in) {
    kernel::IB_MR* mr = UseObjects() ? mrs_.Find(in.mr.value) : nullptr;
    if (mr == nullptr) return HandleDeregMr(in);
    return Destroy(mrs_, mr, [&](kernel::Irp* irp) { return kernel::IbDeregMr(mr, irp); });
  }
  Status CreateQp(const abi::CreateQpIn& in, abi::CreateQpOut* out) {
    kernel::IB_PD* pd = UseObjects() ? pds_.Find(in.pd.value) : nullptr;
    kernel::IB_CQ* send_cq = cqs_.Find(in.send_cq.value);
    kernel::IB_CQ* recv_cq = cqs_.Find(in.recv_cq.value);
    if (pd == nullptr || send_cq == nullptr || recv_cq == nullptr || !in.srq.IsNull()) {
      return HandleCreateQp(in, out);
    }
    kernel::IB_QP_CREATE create;
    create.send_cq = send_cq;
    create.recv_cq = recv_cq;
    create.params = in.params;
    create.context = in.context;
    kernel::IB_QP* qp = nullptr;
    const Status s =
        Create(qps_, &qp, [&](kernel::Irp* irp) { return kernel::IbCreateQp(pd, &create, irp); });
    *out = {};
    if (qp != nullptr) {
      out->qp.value = qp->handle;
      out->qp_num = qp->qp_num;
      out->caps = qp->caps;
    }
    return s;
  }
  Status QueryQp(const abi::QueryQpIn& in, abi::QueryQpOut* out) {
    kernel::IB_QP* qp = UseObjects() ? qps_.Find(in.qp.value) : nullptr;
    if (qp == nullptr) return HandleQueryQp(in, out);
    return kernel::IbCallAndWait([&](kernel::Irp* irp) { return kernel::IbQueryQp(qp, out, irp); });
  }
  Status ModifyQp(const abi::ModifyQpIn& in) {
    kernel::IB_QP* qp = UseObjects() ? qps_.Find(in.qp.value) : nullptr;
    if (qp == nullptr) return HandleModifyQp(in);
    return kernel::IbCallAndWait([&](kernel::Irp* irp) { return kernel::IbModifyQp(qp, in, irp); });
  }
  Status DestroyQp(const abi::DestroyQpIn& in) {
    kernel::IB_QP* qp = UseObjects() ? qps_.Find(in.qp.value) : nullptr;
    if (qp == nullptr) return HandleDestroyQp(in);
    return Destroy(qps_, qp, [&](kernel::Irp* irp) { return kernel::IbDestroyQp(qp, irp); });
  }

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
  ObjectTable<kernel::IB_CA> cas_;
  ObjectTable<kernel::IB_PD> pds_;
  ObjectTable<kernel::IB_CQ> cqs_;
  ObjectTable<kernel::IB_MR> mrs_;
  ObjectTable<kernel::IB_QP> qps_;

  bool UseObjects() const {
    return path_ == Path::kDirect && kernel::CurrentIrql() == kernel::Irql::kPassive;
  }
  template <typename Object, typename Call>
  static Status Create(ObjectTable<Object>& table, Object** object, Call&& call) {
    const Status s = kernel::IbCreateAndWait(call, object);
    if (s == Status::SUCCESS) table.Add(*object);
    return s;
  }
  template <typename Object, typename Call>
  static Status Destroy(ObjectTable<Object>& table, Object* object, Call&& call) {
    const uint64_t handle = object->handle;
    const Status s = kernel::IbCallAndWait(call);
    if (s == Status::SUCCESS) table.Remove(handle);
    return s;
  }

  // The handle-based forms (direct call or IRP by the chosen path).
#define SOFTIB_VERB_OUT(Verb)                                                                      \
  Status Handle##Verb(const abi::Verb##In& in, abi::Verb##Out* out) {                              \
    if (path_ == Path::kDirect) return kernel::Ib##Verb(al_, in, *out);                            \
    return kernel::Call##Verb##Irp(kernel::IbGetAlDevice(al_), kernel::IbGetAlFile(al_), in, out); \
  }
#define SOFTIB_VERB(Verb)                                                                     \
  Status Handle##Verb(const abi::Verb##In& in) {                                              \
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
#undef SOFTIB_VERB_OUT
#undef SOFTIB_VERB
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

// SOFTIB_CI_PEND for one boot (the node stack reads it when it adds a CA): the HCA driver
// completes every CI IRP later, from a DPC.
class PendMode {
 public:
  explicit PendMode(bool pend) {
    if (const char* old = std::getenv("SOFTIB_CI_PEND")) saved_ = old;
    setenv("SOFTIB_CI_PEND", pend ? "1" : "0", 1);
  }
  ~PendMode() {
    if (saved_.empty()) {
      unsetenv("SOFTIB_CI_PEND");
    } else {
      setenv("SOFTIB_CI_PEND", saved_.c_str(), 1);
    }
  }
  PendMode(const PendMode&) = delete;
  PendMode& operator=(const PendMode&) = delete;

 private:
  std::string saved_;
};

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
