// Connected mode (RFC 4755): a peer whose hardware address carries 'C' gets an RC
// connection made through the AL's CM — REQ to service ID 0x1000000000000000 | the peer's
// UD QPN with the RFC's private data (our UD QPN, our receive MTU), REP likewise, RTU —
// and unicast IP to it goes over that RC QP (frames wait, a bounded number, while it
// connects). Receives of every RC QP come from one SRQ whose buffers, like the RC send
// buffers, are part of the interface's one registration. ARP, ND and multicast stay on UD,
// as does a peer without 'C' or whose connection was refused or failed; IPv4 datagrams
// for UD larger than its MTU are fragmented here, with DF answered by ICMP "fragmentation
// needed", IPv6 by Packet Too Big (translate.h). Both ends use a connection both ways.
//
// The CEP events come from CepGetEvent IRPs kept pending at the PDO; their completion
// routines queue a work item that handles the event at PASSIVE, where the CM's and the RC
// QP's verbs are called directly (they may pend and be waited for there). Shutdown waits
// for a running item before the AL goes (CmQuiesce); an item that starts later sees
// `stopping` and does nothing.
#include <endian.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "internal.h"
#include "kernel/verbs_al_direct.h"
#include "kernel/verbs_cm_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "kernel/verbs_srq_direct.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/work_item.h"
#include "softib/mad/mad_sa.h"

namespace softib::ipoib {

using kernel::Status;

struct CmConnection {
  enum class State { kResolving, kConnecting, kEstablished, kFailed, kClosed };
  State state = State::kResolving;
  bool active = false;
  HwAddr peer;  // the peer's UD address
  uint64_t qp = 0;
  uint32_t qpn = 0;
  uint64_t cep = 0;
  std::chrono::steady_clock::time_point last_used{};  // the last RC send or receive (idle)
  std::deque<std::vector<uint8_t>> queued;            // host frames waiting for the connection
  abi::CepGetEventOut event{};
  abi::SendSaRequestOut request{};
  std::vector<uint8_t> response = std::vector<uint8_t>(sizeof(abi::GetSaResponseOut) + 256);
};

struct CmState {
  uint64_t srq = 0;
  uint64_t listen = 0;
  abi::CepGetEventOut listen_event{};
  uint8_t* rx_base = nullptr;
  uint8_t* tx_base = nullptr;
  std::vector<uint32_t> tx_free;  // under the interface's lock
  // Under the lock. A closed connection goes at its CEP's TIMEWAIT_EXIT (its QP and CEP
  // destroyed), the rest at shutdown.
  std::vector<std::unique_ptr<CmConnection>> connections;
  uint32_t running = 0;  // work items inside their routine (under the lock)
  // Idle connections (InterfaceConfig::cm_idle_timeout): a periodic check.
  bool idle_armed = false;
  kernel::Ktimer idle_timer{};
  kernel::Kdpc idle_dpc{};
};

namespace {

constexpr size_t kCmMaxQueued = 16;
constexpr uint32_t kCmReceiveMtu = kCmMtu + kEncapBytes;  // RFC 4755 §3.1: IPoIB packet bytes
constexpr size_t kReqPrivateData = 24 + 140;              // MAD offsets (mad_cm.idl)
constexpr size_t kReqPrimaryLocalGid = 24 + 56;
constexpr size_t kRepPrivateData = 24 + 36;

std::array<uint8_t, 8> CmPrivateData(uint32_t ud_qpn) {
  return {0,
          static_cast<uint8_t>(ud_qpn >> 16),
          static_cast<uint8_t>(ud_qpn >> 8),
          static_cast<uint8_t>(ud_qpn),
          static_cast<uint8_t>(kCmReceiveMtu >> 24),
          static_cast<uint8_t>(kCmReceiveMtu >> 16),
          static_cast<uint8_t>(kCmReceiveMtu >> 8),
          static_cast<uint8_t>(kCmReceiveMtu)};
}
uint32_t PrivateDataQpn(const uint8_t* p) {
  return uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// Runs `fn` at PASSIVE in a work item, unless the interface stops first.
struct CmWork {
  Interface* i;
  std::function<void()> fn;
  kernel::IoWorkItem* item;
};
void RunCmWork(kernel::DeviceObject*, void* context) {
  auto* work = static_cast<CmWork*>(context);
  Interface* i = work->i;
  bool run = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (!i->stopping && i->cm != nullptr) {
      ++i->cm->running;
      run = true;
    }
  }
  if (run) {
    work->fn();
    kernel::SpinLockGuard guard(i->lock);
    --i->cm->running;
  }
  kernel::IoFreeWorkItem(work->item);
  delete work;
  i->Release();
}
void AtPassive(Interface* i, std::function<void()> fn) {
  kernel::IoWorkItem* item = kernel::IoAllocateWorkItem(i->port->fdo);
  if (item == nullptr) return;
  i->Hold();
  kernel::IoQueueWorkItem(item, &RunCmWork, new CmWork{i, std::move(fn), item});
}

// Teardown of an established connection: its QP to ERROR (its sends flushed, their slots
// back) and a DREQ; the CEP's DREP (or DREQ_TIMEOUT) and TIMEWAIT_EXIT follow, and at the
// latter the connection is freed (OnConnectionEvent).
struct CmClosing {
  uint64_t cep = 0;
  uint64_t qp = 0;
};
void QpToError(Interface* i, uint64_t qp) {
  if (qp == 0) return;
  abi::ModifyQpIn in{};
  in.qp.value = qp;
  in.attributes.mask = abi::QpAttrMask::STATE;
  in.attributes.state = abi::QpState::ERROR;
  kernel::IbModifyQp(i->al, in);
}
// Under the lock: `c`, when established, is closed and its teardown added to `out`.
void CloseLocked(CmConnection* c, std::vector<CmClosing>* out) {
  if (c->state != CmConnection::State::kEstablished) return;
  c->state = CmConnection::State::kClosed;
  out->push_back({c->cep, c->qp});
}
// At PASSIVE (a work item; may be called under the lock).
void DisconnectLater(Interface* i, std::vector<CmClosing> closing) {
  if (closing.empty()) return;
  AtPassive(i, [i, closing] {
    for (const CmClosing& c : closing) {
      QpToError(i, c.qp);  // first: the QP is destroyed only after the DREQ's time-wait
      if (c.cep != 0) kernel::IbCepSendDreq(i->al, {{c.cep}, 0, 0}, {});
    }
  });
}

// TIMEWAIT_EXIT: the connection's CEP is done; its QP and CEP are destroyed and it leaves
// the list (nothing refers to it any more: no event IRP armed, not found by CmTransmit).
void Free(Interface* i, CmConnection* c) {
  if (c->qp != 0) kernel::IbDestroyQp(i->al, {{c->qp}});
  if (c->cep != 0) kernel::IbDestroyCep(i->al, {{c->cep}});
  kernel::SpinLockGuard guard(i->lock);
  auto& list = i->cm->connections;
  list.erase(std::remove_if(list.begin(), list.end(), [c](const auto& o) { return o.get() == c; }),
             list.end());
}

void CmPostReceive(Interface* i, uint32_t slot) {
  abi::RecvWorkRequest wr{};
  wr.wr_id = kCmWrBit | slot;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(i->cm->rx_base +
                                          static_cast<size_t>(slot) * kCmSlotBytes + kGrhBytes),
               kCmSlotBytes - static_cast<uint32_t>(kGrhBytes), i->lkey};
  uint32_t posted = 0;
  kernel::IbPostSrqRecv(i->al, i->cm->srq, {&wr, 1}, &posted);
}

// The frames a connection held go again through Transmit: over RC once established, over
// UD (fragmented as needed) when it failed.
void Requeue(Interface* i, CmConnection* c) {
  std::deque<std::vector<uint8_t>> frames;
  {
    kernel::SpinLockGuard guard(i->lock);
    frames.swap(c->queued);
  }
  for (const auto& frame : frames) Transmit(i, frame);
}

void Fail(Interface* i, CmConnection* c) {
  {
    kernel::SpinLockGuard guard(i->lock);
    c->state = CmConnection::State::kFailed;
  }
  Requeue(i, c);
}

void Established(Interface* i, CmConnection* c) {
  {
    kernel::SpinLockGuard guard(i->lock);
    if (c->state == CmConnection::State::kClosed) return;
    c->state = CmConnection::State::kEstablished;
    c->last_used = std::chrono::steady_clock::now();
  }
  Requeue(i, c);
}

bool ToState(Interface* i, CmConnection* c, bool rts) {
  abi::ModifyQpIn in{};
  in.qp.value = c->qp;
  if (rts) {
    abi::CepGetRtsAttributesOut out{};
    if (kernel::IbCepGetRtsAttributes(i->al, {{c->cep}}, out) != Status::SUCCESS) return false;
    in.attributes = out.attributes;
  } else {
    abi::CepGetRtrAttributesOut out{};
    if (kernel::IbCepGetRtrAttributes(i->al, {{c->cep}}, out) != Status::SUCCESS) return false;
    in.attributes = out.attributes;
  }
  return kernel::IbModifyQp(i->al, in) == Status::SUCCESS;
}

// An RC QP on the SRQ, in INIT.
bool CreateRcQp(Interface* i, CmConnection* c) {
  abi::CreateQpIn in{};
  in.pd.value = i->pd;
  in.send_cq.value = i->cq;
  in.recv_cq.value = i->cq;
  in.srq.value = i->cm->srq;
  in.params.qp_type = abi::QpType::RC;
  in.params.sq_signaled = 1;
  in.params.caps = {kCmTxSlots, 0, 1, 1, 0, 0};
  in.context = reinterpret_cast<uint64_t>(i);
  abi::CreateQpOut out{};
  if (kernel::IbCreateQp(i->al, in, out) != Status::SUCCESS) return false;
  c->qp = out.qp.value;
  c->qpn = out.qp_num;
  using M = abi::QpAttrMask;
  abi::ModifyQpIn modify{};
  modify.qp.value = c->qp;
  modify.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
  modify.attributes.state = abi::QpState::INIT;
  modify.attributes.port_num = i->port->port;
  modify.attributes.pkey_index = i->pkey_index;
  modify.attributes.access_flags = abi::AccessFlags::LOCAL_WRITE;
  return kernel::IbModifyQp(i->al, modify) == Status::SUCCESS;
}

bool CreateCep(Interface* i, CmConnection* c) {
  abi::CreateCepOut out{};
  if (kernel::IbCreateCep(i->al, {{i->al_handle}, reinterpret_cast<uint64_t>(c)}, out) !=
      Status::SUCCESS)
    return false;
  c->cep = out.cep.value;
  return true;
}

void OnConnectionEvent(Interface* i, CmConnection* c);

void ArmConnection(Interface* i, CmConnection* c) {
  if (Stopping(i)) return;
  SendVerb(i, kernel::BuildCepGetEventIrp(i->pdo, i->file, {{c->cep}}, &c->event), &c->event,
           sizeof c->event, [i, c](Status status, uint64_t) {
             if (status != Status::SUCCESS || Stopping(i)) return;
             AtPassive(i, [i, c] { OnConnectionEvent(i, c); });
           });
}

void OnConnectionEvent(Interface* i, CmConnection* c) {
  using E = abi::CepEventType;
  switch (c->event.event) {
    case E::REP_RECEIVED: {  // active: RTR, RTS, RTU
      if (!ToState(i, c, false) || !ToState(i, c, true) ||
          kernel::IbCepSendRtu(i->al, {{c->cep}, 0, 0}, {}) != Status::SUCCESS) {
        Fail(i, c);
        return;
      }
      ArmConnection(i, c);
      Established(i, c);
      return;
    }
    case E::RTU_RECEIVED:  // passive: RTS
      if (!ToState(i, c, true)) {
        Fail(i, c);
        return;
      }
      ArmConnection(i, c);
      Established(i, c);
      return;
    case E::DREQ_RECEIVED: {
      {
        kernel::SpinLockGuard guard(i->lock);
        c->state = CmConnection::State::kClosed;
      }
      QpToError(i, c->qp);
      kernel::IbCepSendDrep(i->al, {{c->cep}, 0, 0}, {});
      Requeue(i, c);        // before the next event: TIMEWAIT_EXIT frees `c`
      ArmConnection(i, c);  // TIMEWAIT_EXIT
      return;
    }
    case E::DREP_RECEIVED:
    case E::DREQ_TIMEOUT: {  // our DREQ answered or not: time-wait, then TIMEWAIT_EXIT
      {
        kernel::SpinLockGuard guard(i->lock);
        c->state = CmConnection::State::kClosed;
      }
      ArmConnection(i, c);
      return;
    }
    case E::TIMEWAIT_EXIT:
      Free(i, c);
      return;
    case E::MRA_RECEIVED:
      ArmConnection(i, c);
      return;
    default:  // REJ, timeouts: UD from now on
      Fail(i, c);
      return;
  }
}

// Active side: the path is known, the QP, the CEP and the REQ.
void Connect(Interface* i, CmConnection* c, const mad::PathRecord& record) {
  uint32_t ud_qpn = 0;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    ud_qpn = i->local.hw.qpn;
    c->state = CmConnection::State::kConnecting;
  }
  if (!CreateRcQp(i, c) || !CreateCep(i, c)) {
    Fail(i, c);
    return;
  }
  abi::CepSendReqIn req{};
  req.cep.value = c->cep;
  req.qp.value = c->qp;
  req.params.service_id = htobe64(kCmServiceIdBase | c->peer.qpn);
  const auto bytes = record.Pack();
  std::memcpy(req.params.primary_path, bytes.data(), bytes.size());
  req.params.starting_psn = c->qpn & 0xFFFFFF;
  req.params.responder_resources = 0;
  req.params.initiator_depth = 0;
  req.params.remote_cm_response_timeout = 18;
  req.params.local_cm_response_timeout = 18;
  req.params.retry_count = 7;
  req.params.rnr_retry_count = 7;
  req.params.max_cm_retries = 3;
  const auto pdata = CmPrivateData(ud_qpn);
  req.private_data_length = static_cast<uint32_t>(pdata.size());
  if (kernel::IbCepSendReq(i->al, req, pdata) != Status::SUCCESS) {
    Fail(i, c);
    return;
  }
  ArmConnection(i, c);
}

void AwaitCmPath(Interface* i, CmConnection* c) {
  SendVerb(i,
           kernel::BuildGetSaResponseIrp(i->pdo, i->file, {c->request.req}, c->response.data(),
                                         static_cast<uint32_t>(c->response.size())),
           c->response.data(), static_cast<uint32_t>(c->response.size()),
           [i, c](Status status, uint64_t) {
             abi::GetSaResponseOut out{};
             std::memcpy(&out, c->response.data(), sizeof out);
             mad::PathRecord record{};
             if (status != Status::SUCCESS || out.mad_status != 0 || out.num_records == 0 ||
                 out.data_length < mad::PathRecord::kSize ||
                 !record.Unpack({c->response.data() + sizeof out, mad::PathRecord::kSize}) ||
                 record.DLID == 0 || Stopping(i)) {
               if (!Stopping(i)) Fail(i, c);
               return;
             }
             AtPassive(i, [i, c, record] { Connect(i, c, record); });
           });
}

void StartConnect(Interface* i, CmConnection* c) {
  abi::SendSaRequestIn in{};
  mad::PathRecord record{};
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    in.port_guid = i->port_guid_be;
    record.SGID = i->local.hw.gid;
    record.P_Key = i->local.pkey;
  }
  record.DGID = c->peer.gid;
  record.Reversible = 1;
  record.NumbPath = 1;
  in.al.value = i->al_handle;
  in.component_mask = (1ull << 2) | (1ull << 3) | (1ull << 11) | (1ull << 12) | (1ull << 13);
  in.timeout_ms = 500;
  in.retry_count = 3;
  in.attribute_id = mad::PathRecord::kAttributeId;
  in.method = 0x01;
  in.attribute_length = mad::PathRecord::kSize;
  const auto bytes = record.Pack();
  SendVerb(i, kernel::BuildSendSaRequestIrp(i->pdo, i->file, in, bytes, &c->request), &c->request,
           sizeof c->request, [i, c](Status status, uint64_t) {
             if (Stopping(i)) return;
             if (status != Status::SUCCESS) {
               Fail(i, c);
               return;
             }
             AwaitCmPath(i, c);
           });
}

void OnListenEvent(Interface* i);

void ArmListen(Interface* i) {
  if (Stopping(i)) return;
  CmState* cm = i->cm;
  SendVerb(i, kernel::BuildCepGetEventIrp(i->pdo, i->file, {{cm->listen}}, &cm->listen_event),
           &cm->listen_event, sizeof cm->listen_event, [i](Status status, uint64_t) {
             if (status != Status::SUCCESS || Stopping(i)) return;
             AtPassive(i, [i] { OnListenEvent(i); });
           });
}

// Passive side: a REQ for our service ID: a QP on the SRQ, the REP, RTR; RTS at the RTU.
void OnListenEvent(Interface* i) {
  CmState* cm = i->cm;
  const abi::CepGetEventOut& e = cm->listen_event;
  if (e.event != abi::CepEventType::REQ_RECEIVED || e.new_cep.value == 0) {
    ArmListen(i);
    return;
  }
  auto owned = std::make_unique<CmConnection>();
  CmConnection* c = owned.get();
  c->cep = e.new_cep.value;
  c->state = CmConnection::State::kConnecting;
  c->peer.flags = HwAddr::kConnectedFlag;
  c->peer.qpn = PrivateDataQpn(e.mad + kReqPrivateData);
  std::memcpy(c->peer.gid.data(), e.mad + kReqPrimaryLocalGid, 16);
  uint32_t ud_qpn = 0;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    ud_qpn = i->local.hw.qpn;
    cm->connections.push_back(std::move(owned));
  }
  ArmListen(i);
  abi::CepSendRepIn rep{};
  rep.cep.value = c->cep;
  const auto pdata = CmPrivateData(ud_qpn);
  rep.private_data_length = static_cast<uint32_t>(pdata.size());
  bool ok = CreateRcQp(i, c);
  if (ok) {
    rep.qp.value = c->qp;
    rep.params.starting_psn = c->qpn & 0xFFFFFF;
    rep.params.rnr_retry_count = 7;
    rep.params.failover = abi::CmFailover::UNSUPPORTED;
    rep.params.srq = 1;
    // RTR before the REP leaves (as Linux's rdma_accept does): the peer may send as soon as it has
    // the REP.
    ok = ToState(i, c, false) && kernel::IbCepSendRep(i->al, rep, pdata) == Status::SUCCESS;
  }
  if (!ok) {
    abi::CepSendRejIn rej{};
    rej.cep.value = c->cep;
    rej.reason = 28;  // consumer reject
    kernel::IbCepSendRej(i->al, rej, {});
    Fail(i, c);
    return;
  }
  ArmConnection(i, c);
}

// The established connection to `hw`, or nullptr. Under the lock.
CmConnection* FindConnectionLocked(Interface* i, const HwAddr& hw, CmConnection** pending) {
  CmConnection* found = nullptr;
  *pending = nullptr;
  for (auto& c : i->cm->connections) {
    if (c->peer.qpn != hw.qpn || c->peer.gid != hw.gid) continue;
    if (c->state == CmConnection::State::kEstablished) return c.get();
    if (c->state == CmConnection::State::kResolving || c->state == CmConnection::State::kConnecting)
      *pending = c.get();
    if (c->state == CmConnection::State::kFailed) found = c.get();
  }
  return found != nullptr && *pending == nullptr ? found : nullptr;
}

void DeliverAnswer(Interface* i, const std::vector<uint8_t>& answer) {
  if (answer.empty()) return;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
  }
  i->face->DeliverToHost(answer);
}

// The idle check (every quarter of cm_idle_timeout, at most 1 s apart): an established
// connection without a send or a receive for cm_idle_timeout is torn down.
void CmIdleDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* i = static_cast<Interface*>(context);
  std::vector<CmClosing> closing;
  kernel::SpinLockGuard guard(i->lock);
  if (i->stopping || i->cm == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  for (auto& c : i->cm->connections) {
    if (c->state == CmConnection::State::kEstablished &&
        now - c->last_used >= i->config.cm_idle_timeout)
      CloseLocked(c.get(), &closing);
  }
  DisconnectLater(i, std::move(closing));
}

void StartIdleCheck(Interface* i) {
  const auto timeout = i->config.cm_idle_timeout;
  if (timeout <= std::chrono::milliseconds::zero()) return;
  const auto period = std::clamp<std::chrono::nanoseconds>(
      timeout / 4, std::chrono::milliseconds(5), std::chrono::seconds(1));
  CmState* cm = i->cm;
  kernel::KeInitializeDpc(&cm->idle_dpc, i->node, &CmIdleDpc, i);
  kernel::KeInitializeTimer(&cm->idle_timer, i->node);
  kernel::KeSetTimer(&cm->idle_timer, period, &cm->idle_dpc, period);
  cm->idle_armed = true;
}

}  // namespace

size_t CmMemoryBytes(const Interface* i) {
  return i->config.mode == Mode::kConnected
             ? static_cast<size_t>(kCmRxSlots + kCmTxSlots) * kCmSlotBytes
             : 0;
}

Status CmSetUp(Interface* i, uint8_t* base) {
  auto* cm = new CmState;
  i->cm = cm;
  cm->rx_base = base;
  cm->tx_base = base + static_cast<size_t>(kCmRxSlots) * kCmSlotBytes;
  abi::CreateSrqIn in{};
  in.pd.value = i->pd;
  in.attributes.max_wr = kCmRxSlots;
  in.attributes.max_sge = 1;
  in.context = reinterpret_cast<uint64_t>(i);
  abi::CreateSrqOut srq{};
  Status status = kernel::IbCreateSrq(i->al, in, srq);
  if (status != Status::SUCCESS) return status;
  cm->srq = srq.srq.value;
  for (uint32_t slot = 0; slot < kCmRxSlots; ++slot) CmPostReceive(i, slot);
  for (uint32_t slot = kCmTxSlots; slot > 0; --slot) cm->tx_free.push_back(slot - 1);
  abi::CreateCepOut cep{};
  status = kernel::IbCreateCep(i->al, {{i->al_handle}, reinterpret_cast<uint64_t>(i)}, cep);
  if (status != Status::SUCCESS) return status;
  cm->listen = cep.cep.value;
  abi::CepListenIn listen{};
  listen.cep = cep.cep;
  {
    kernel::SpinLockGuard guard(i->lock);
    listen.service_id = htobe64(kCmServiceIdBase | i->local.hw.qpn);
    listen.port_guid = i->port_guid_be;
  }
  status = kernel::IbCepListen(i->al, listen);
  if (status != Status::SUCCESS) return status;
  ArmListen(i);
  StartIdleCheck(i);
  return Status::SUCCESS;
}

bool CmTransmit(Interface* i, std::span<const uint8_t> frame, bool resend) {
  if (i->cm == nullptr || frame.size() < kEthHeaderBytes) return false;
  CmConnection* start = nullptr;
  uint32_t ud_mtu = 0;
  std::array<uint8_t, 4> v4{};
  std::array<uint8_t, 16> v6{};
  bool have_v4 = false, have_v6 = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping || !i->carrier) return false;
    ud_mtu = i->ib_mtu - static_cast<uint32_t>(kEncapBytes);
    Mac dst;
    std::memcpy(dst.data(), frame.data(), 6);
    Neighbour* n = (dst[0] & 1) == 0 ? i->neighbours.FindByMac(dst) : nullptr;
    if (n != nullptr && n->hw.connected()) {
      CmConnection* pending = nullptr;
      CmConnection* c = FindConnectionLocked(i, n->hw, &pending);
      if (c != nullptr && c->state == CmConnection::State::kEstablished) {
        if (frame.size() > kCmSlotBytes - kTxFrameOffset - kTxTailroom) {
          CountDropLocked(i, Drop::kOversize, true);
          return true;
        }
        if (i->cm->tx_free.empty()) {  // the RC send ring is full: the frame waits (flow.cc)
          HoldFrameLocked(i, frame, true, resend);
          return true;
        }
        const uint32_t slot = i->cm->tx_free.back();
        i->cm->tx_free.pop_back();
        uint8_t* buffer = i->cm->tx_base + static_cast<size_t>(slot) * kCmSlotBytes;
        std::memcpy(buffer + kTxFrameOffset, frame.data(), frame.size());
        const TxResult r = TranslateFromHost({buffer, kCmSlotBytes}, kTxFrameOffset, frame.size(),
                                             i->local, i->neighbours);
        if (r.drop != Drop::kNone) {
          i->cm->tx_free.push_back(slot);
          CountDropLocked(i, r.drop, true);
          return true;
        }
        abi::SendWorkRequest wr{};
        wr.wr_id = kCmWrBit | kSendWrBit | slot;
        wr.wr_type = abi::WrType::SEND;
        wr.send_flags = abi::SendFlags::SIGNALED;
        wr.num_sge = 1;
        wr.sge[0] = {reinterpret_cast<uint64_t>(buffer + r.offset), static_cast<uint32_t>(r.length),
                     i->lkey};
        uint32_t posted = 0;
        if (kernel::IbPostSend(i->al, c->qp, {&wr, 1}, &posted) != Status::SUCCESS || posted != 1) {
          i->cm->tx_free.push_back(slot);
          ++i->counters.tx_dropped;
          return true;
        }
        ++i->counters.tx_packets;
        i->counters.tx_bytes += r.length;
        c->last_used = std::chrono::steady_clock::now();
        return true;
      }
      if (pending != nullptr) {
        if (pending->queued.size() < kCmMaxQueued) {
          pending->queued.emplace_back(frame.begin(), frame.end());
        } else {
          CountDropLocked(i, Drop::kNoNeighbour, true);
        }
        return true;
      }
      if (c == nullptr) {  // none yet (a failed one sends over UD)
        auto owned = std::make_unique<CmConnection>();
        start = owned.get();
        start->active = true;
        start->peer = n->hw;
        start->queued.emplace_back(frame.begin(), frame.end());
        i->cm->connections.push_back(std::move(owned));
      }
    }
    if (start == nullptr) {
      for (const IpAddr& a : i->addresses) {
        if (!a.v6 && !have_v4) {
          std::memcpy(v4.data(), a.bytes.data(), 4);
          have_v4 = true;
        } else if (a.v6 && !have_v6) {
          v6 = a.bytes;
          have_v6 = true;
        }
      }
    }
  }
  if (start != nullptr) {
    StartConnect(i, start);
    return true;
  }
  // Over UD: at most the UD MTU.
  std::vector<std::vector<uint8_t>> fragments;
  switch (FragmentForMtu(frame, ud_mtu, &fragments)) {
    case FragmentOutcome::kFits:
      return false;
    case FragmentOutcome::kFragmented:
      for (const auto& f : fragments) Transmit(i, f);
      return true;
    case FragmentOutcome::kDontFragment:
      if (!have_v4 && frame.size() >= kEthHeaderBytes + 20)
        std::memcpy(v4.data(), frame.data() + kEthHeaderBytes + 16, 4);
      DeliverAnswer(i, BuildIcmpFragmentationNeeded(frame, ud_mtu, v4));
      return true;
    case FragmentOutcome::kTooBig:
      if (!have_v6 && frame.size() >= kEthHeaderBytes + 40)
        std::memcpy(v6.data(), frame.data() + kEthHeaderBytes + 24, 16);
      DeliverAnswer(i, BuildIcmpv6PacketTooBig(frame, ud_mtu, v6));
      return true;
    case FragmentOutcome::kMalformed:
      break;
  }
  kernel::SpinLockGuard guard(i->lock);
  CountDropLocked(i, Drop::kRunt, true);
  return true;
}

void CmOnCompletion(Interface* i, const abi::WorkCompletion& wc) {
  const auto slot = static_cast<uint32_t>(wc.wr_id & 0xFFFFFFFF);
  if ((wc.wr_id & kSendWrBit) != 0) {
    kernel::SpinLockGuard guard(i->lock);
    i->cm->tx_free.push_back(slot);
    if (wc.status != abi::WcStatus::SUCCESS) {
      ++i->counters.tx_dropped;
      // The connection broke (retries exhausted, flushed): it is torn down and the next
      // frame connects anew.
      std::vector<CmClosing> closing;
      for (auto& c : i->cm->connections) {
        if (c->qpn == wc.qp_num) CloseLocked(c.get(), &closing);
      }
      if (!i->stopping) DisconnectLater(i, std::move(closing));
    }
    return;
  }
  uint8_t* buffer = i->cm->rx_base + static_cast<size_t>(slot) * kCmSlotBytes;
  RxResult result{};
  bool deliver = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    CmConnection* from = nullptr;
    for (const auto& c : i->cm->connections) {
      if (c->qpn == wc.qp_num && c->qp != 0) from = c.get();
    }
    if (from != nullptr) from->last_used = std::chrono::steady_clock::now();
    if (wc.status != abi::WcStatus::SUCCESS) {
      ++i->counters.rx_dropped;
    } else if (from == nullptr) {
      CountDropLocked(i, Drop::kNoNeighbour, false);
    } else if (wc.length < kEncapBytes) {
      CountDropLocked(i, Drop::kRunt, false);
    } else {
      RxSource source{};
      source.qpn = from->peer.qpn;
      source.slid = wc.slid;
      source.has_grh = true;  // the connection names the sender fully
      source.sgid = from->peer.gid;
      source.dgid = i->local.hw.gid;
      result = TranslateToHost({buffer, kCmSlotBytes}, kGrhBytes, wc.length, source, i->local,
                               i->neighbours);
      if (result.drop != Drop::kNone) {
        CountDropLocked(i, result.drop, false);
      } else {
        ++i->counters.rx_packets;
        i->counters.rx_bytes += result.length;
        deliver = true;
        // ARP/ND over RC (a unicast reply) teach IBAT as over UD (and show a peer moving).
        IbatLearnLocked(i, {buffer + result.offset, result.length}, false);
      }
    }
  }
  if (deliver) i->face->DeliverToHost({buffer + result.offset, result.length});
  kernel::SpinLockGuard guard(i->lock);
  if (!i->stopping) CmPostReceive(i, slot);
}

void CmDropAll(Interface* i) {
  if (i->cm == nullptr) return;
  std::vector<CmClosing> closing;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    for (auto& c : i->cm->connections) {
      if (c->state == CmConnection::State::kFailed) {
        c->state = CmConnection::State::kClosed;
        if (c->cep != 0) closing.push_back({c->cep, 0});
      }
      CloseLocked(c.get(), &closing);
    }
  }
  DisconnectLater(i, std::move(closing));
}

void CmPeerChangedLocked(Interface* i, const HwAddr& old_hw) {
  if (i->cm == nullptr || i->stopping) return;
  std::vector<CmClosing> closing;
  for (auto& c : i->cm->connections) {
    if (c->peer.qpn == (old_hw.qpn & 0xFFFFFF) && c->peer.gid == old_hw.gid)
      CloseLocked(c.get(), &closing);
  }
  DisconnectLater(i, std::move(closing));
}

void CmQuiesce(Interface* i) {
  if (i->cm == nullptr) return;
  if (i->cm->idle_armed) {
    kernel::KeCancelTimer(&i->cm->idle_timer);
    kernel::KeFlushQueuedDpcs(i->node);
  }
  for (;;) {
    {
      kernel::SpinLockGuard guard(i->lock);
      if (i->cm->running == 0) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void CmShutdown(Interface* i) { delete std::exchange(i->cm, nullptr); }

size_t CmConnections(Interface* i) {
  kernel::SpinLockGuard guard(i->lock);
  if (i->cm == nullptr) return 0;
  return static_cast<size_t>(
      std::count_if(i->cm->connections.begin(), i->cm->connections.end(),
                    [](const auto& c) { return c->state == CmConnection::State::kEstablished; }));
}

}  // namespace softib::ipoib
