// Endpoint: the objects of one side and the QP state transitions of perftest's set-up.
#include "endpoint.h"

#include <endian.h>
#include <sys/mman.h>

#include <algorithm>
#include <random>

#include "control_qp.h"

namespace softib::perf {

namespace {

using abi::QpAttrMask;

constexpr uint64_t kAllSlotsLimit = 64u << 20;  // beyond this, receives share one slot
constexpr uint32_t kGrhRoom = 40;

uint64_t RoundUp(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

abi::QpType QpTypeOf(Transport t) {
  switch (t) {
    case Transport::kUc:
      return abi::QpType::UC;
    case Transport::kUd:
      return abi::QpType::UD;
    default:
      return abi::QpType::RC;
  }
}

}  // namespace

BufferLayout BufferLayout::For(const TestPlan& plan) {
  BufferLayout l;
  uint32_t largest = 8;
  for (uint32_t i = 0; i < plan.num_sizes; ++i) largest = std::max(largest, plan.sizes[i]);
  l.grh_room = plan.transport == static_cast<uint32_t>(Transport::kUd) ? kGrhRoom : 0;
  l.slot_bytes = RoundUp(largest + l.grh_room, 64);
  const bool send = IsSend(static_cast<TestKind>(plan.test));
  l.slots = 1;
  if (send && l.slot_bytes * plan.rx_depth <= kAllSlotsLimit) l.slots = plan.rx_depth;
  l.source_offset = l.slot_bytes * l.slots;
  l.source_bytes = std::max<uint64_t>(l.slot_bytes, RoundUp(8ull * plan.tx_depth, 64));
  l.total = RoundUp(l.source_offset + l.source_bytes, 4096);
  return l;
}

uint32_t RecvQueueDepth(const TestPlan& plan) {
  return IsSend(static_cast<TestKind>(plan.test)) ? plan.rx_depth : kControlReceives;
}

Endpoint::~Endpoint() { Destroy(); }

bool Endpoint::Check(Status status, const char* what, std::string* error) {
  if (status == Status::SUCCESS) return true;
  *error = std::string(what) + ": " + abi::ToString(status);
  return false;
}

bool Endpoint::Create(const TestPlan& plan, uint8_t port, std::string* error) {
  transport_ = static_cast<Transport>(plan.transport);
  port_ = port;
  layout_ = BufferLayout::For(plan);
  void* memory =
      mmap(nullptr, layout_.total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    *error = "cannot allocate " + std::to_string(layout_.total) + " bytes of buffer";
    return false;
  }
  buffer_ = static_cast<uint8_t*>(memory);

  abi::QueryCaOut ca_out{};
  abi::PortAttributes ports[8] = {};
  if (!Check(backend_->QueryCa(&ca_out, ports), "QueryCa", error)) return false;
  if (port_ > ca_out.num_ports) {
    *error = "the CA has " + std::to_string(ca_out.num_ports) + " port(s), no port " +
             std::to_string(port_);
    return false;
  }
  const abi::PortAttributes& attributes = ports[port_ - 1];
  if (attributes.link_state != 4) {  // ACTIVE
    *error = "port " + std::to_string(port_) + " is not ACTIVE (cabled?)";
    return false;
  }
  lid_ = attributes.lid;

  abi::AllocPdIn pd_in{};
  pd_in.ca = backend_->ca();
  pd_in.type = abi::PdType::NORMAL;
  abi::AllocPdOut pd_out{};
  if (!Check(backend_->AllocPd(pd_in, &pd_out), "AllocPd", error)) return false;
  pd_ = pd_out.pd;

  abi::RegMemIn mr_in{};
  mr_in.pd = pd_;
  mr_in.region.vaddr = reinterpret_cast<uint64_t>(buffer_);
  mr_in.region.length = layout_.total;
  mr_in.region.access = abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE |
                        abi::AccessFlags::REMOTE_READ | abi::AccessFlags::REMOTE_ATOMIC;
  abi::RegMemOut mr_out{};
  if (!Check(backend_->RegMem(mr_in, &mr_out), "RegMem", error)) return false;
  mr_ = mr_out.mr;
  lkey_ = mr_out.lkey;
  rkey_ = mr_out.rkey;

  const uint32_t rq_depth = RecvQueueDepth(plan);
  const uint32_t sq_depth = plan.tx_depth + kControlSendRoom;
  abi::CreateCqIn cq_in{};
  cq_in.ca = backend_->ca();
  cq_in.size = sq_depth + rq_depth + 16;
  abi::CreateCqOut cq_out{};
  if (!Check(backend_->CreateCq(cq_in, &cq_out), "CreateCq", error)) return false;
  cq_ = cq_out.cq;

  abi::CreateQpIn qp_in{};
  qp_in.pd = pd_;
  qp_in.send_cq = cq_;
  qp_in.recv_cq = cq_;
  qp_in.params.qp_type = QpTypeOf(transport_);
  qp_in.params.sq_signaled = 1;
  qp_in.params.caps.sq_depth = sq_depth;
  qp_in.params.caps.rq_depth = rq_depth;
  qp_in.params.caps.sq_sge = 1;
  qp_in.params.caps.rq_sge = 1;
  qp_in.params.caps.max_inline_data = plan.inline_size;
  abi::CreateQpOut qp_out{};
  if (!Check(backend_->CreateQp(qp_in, &qp_out), "CreateQp", error)) return false;
  qp_ = qp_out.qp;
  qpn_ = qp_out.qp_num;

  abi::ModifyQpIn init{};
  init.qp = qp_;
  init.attributes.mask = QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT;
  init.attributes.state = abi::QpState::INIT;
  init.attributes.port_num = port_;
  if (transport_ == Transport::kUd) {
    init.attributes.mask = init.attributes.mask | QpAttrMask::QKEY;
    init.attributes.qkey = htobe32(kQkey);
  } else {
    init.attributes.mask = init.attributes.mask | QpAttrMask::ACCESS_FLAGS;
    init.attributes.access_flags = transport_ == Transport::kRc
                                       ? abi::AccessFlags::REMOTE_WRITE |
                                             abi::AccessFlags::REMOTE_READ |
                                             abi::AccessFlags::REMOTE_ATOMIC
                                       : abi::AccessFlags::REMOTE_WRITE;
  }
  if (!Check(backend_->ModifyQp(init), "ModifyQp RESET->INIT", error)) return false;

  const Status mapped = backend_->MapRings(cq_, qp_);
  if (mapped != Status::SUCCESS) {
    *error = std::string("MapCqRing/MapQpRings (the speed path): ") + abi::ToString(mapped);
    return false;
  }
  std::random_device random;
  psn_ = random() & 0xFFFFFF;
  return true;
}

PeerInfo Endpoint::LocalInfo() const {
  PeerInfo info;
  info.magic = kInfoMagic;
  info.lid = lid_;
  info.port = port_;
  info.qpn = qpn_;
  info.psn = psn_;
  info.rkey = rkey_;
  info.qkey = kQkey;
  info.vaddr = reinterpret_cast<uint64_t>(buffer_);
  info.buffer_bytes = layout_.total;
  return info;
}

bool Endpoint::Connect(const PeerInfo& peer, std::string* error) {
  if (peer.magic != kInfoMagic || peer.buffer_bytes != layout_.total) {
    *error = "the peer's QP description does not match this side's plan";
    return false;
  }
  peer_ = peer;
  abi::ModifyQpIn rtr{};
  rtr.qp = qp_;
  rtr.attributes.state = abi::QpState::RTR;
  abi::ModifyQpIn rts{};
  rts.qp = qp_;
  rts.attributes.state = abi::QpState::RTS;
  rts.attributes.sq_psn = psn_;
  if (transport_ == Transport::kUd) {
    rtr.attributes.mask = QpAttrMask::STATE;
    rts.attributes.mask = QpAttrMask::STATE | QpAttrMask::SQ_PSN;
    abi::CreateAvIn av_in{};
    av_in.pd = pd_;
    av_in.attributes.port_num = port_;
    av_in.attributes.dlid = peer.lid;
    abi::CreateAvOut av_out{};
    if (!Check(backend_->CreateAv(av_in, &av_out), "CreateAv", error)) return false;
    av_ = av_out.av;
  } else {
    rtr.attributes.mask = QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU |
                          QpAttrMask::DEST_QPN | QpAttrMask::RQ_PSN;
    rtr.attributes.av.port_num = port_;
    rtr.attributes.av.dlid = peer.lid;
    rtr.attributes.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_4096);
    rtr.attributes.dest_qpn = peer.qpn;
    rtr.attributes.rq_psn = peer.psn;
    rts.attributes.mask = QpAttrMask::STATE | QpAttrMask::SQ_PSN;
    if (transport_ == Transport::kRc) {
      rtr.attributes.mask =
          rtr.attributes.mask | QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
      rtr.attributes.max_dest_rd_atomic = 16;
      rtr.attributes.min_rnr_timer = 1;  // 0.01 ms: a receiver behind is back soon
      rts.attributes.mask = rts.attributes.mask | QpAttrMask::TIMEOUT | QpAttrMask::RETRY_COUNT |
                            QpAttrMask::RNR_RETRY | QpAttrMask::MAX_RD_ATOMIC;
      // 4.096 us * 2^18 = 1.07 s: a software HCA on a loaded machine may take longer than
      // the usual 67 ms (timeout 14) to move a deep queue of large writes.
      rts.attributes.timeout = 18;
      rts.attributes.retry_count = 7;
      rts.attributes.rnr_retry = 7;  // forever
      rts.attributes.max_rd_atomic = 16;
    }
  }
  return Check(backend_->ModifyQp(rtr), "ModifyQp INIT->RTR", error) &&
         Check(backend_->ModifyQp(rts), "ModifyQp RTR->RTS", error);
}

bool Endpoint::Modify(const abi::QpModifyAttributes& attributes, const char* what,
                      std::string* error) {
  abi::ModifyQpIn in{};
  in.qp = qp_;
  in.attributes = attributes;
  return Check(backend_->ModifyQp(in), what, error);
}

void Endpoint::Destroy() {
  if (!qp_.IsNull()) backend_->DestroyQp(abi::DestroyQpIn{qp_});
  if (!av_.IsNull()) backend_->DestroyAv(abi::DestroyAvIn{av_});
  if (!cq_.IsNull()) backend_->DestroyCq(abi::DestroyCqIn{cq_});
  if (!mr_.IsNull()) backend_->DeregMr(abi::DeregMrIn{mr_});
  if (!pd_.IsNull()) backend_->DeallocPd(abi::DeallocPdIn{pd_});
  qp_ = {};
  av_ = {};
  cq_ = {};
  mr_ = {};
  pd_ = {};
  if (buffer_ != nullptr) munmap(buffer_, layout_.total);
  buffer_ = nullptr;
}

}  // namespace softib::perf
