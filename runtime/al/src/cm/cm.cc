// The CM's core: its QP1 agents, the CEP tables, sending, events, listens and the end of
// a CEP's handle.
#include "runtime/al/src/cm/cm.h"

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "runtime/al/src/cm/cm_wire.h"
#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

using kernel::Status;

std::chrono::nanoseconds CmTime(uint8_t value) {
  return std::chrono::nanoseconds(uint64_t{4096} << std::min<uint8_t>(value, 31));
}

ConnectionManager::ConnectionManager(AccessLayer* al) : al_(al) {
  // Local communication IDs start at a random value (never 0), so a restarted node does not
  // reuse its predecessor's recent IDs.
  std::random_device seed;
  next_id_ = static_cast<uint32_t>(seed()) | 1;
  kernel::KeInitializeTimer(&timer_, al->node);
  kernel::KeInitializeDpc(&timer_dpc_, al->node, &ConnectionManager::TimerDpc, this);
  GsiAgentSpec spec;
  spec.mgmt_class = kCmClass;
  spec.mgmt_version = kCmClassVersion;
  spec.methods = {kMethodSend};
  spec.on_receive = [this](GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin) {
    OnMad(agent, mad, origin);
  };
  agents_ = GsiRegistration::Register(al, std::move(spec));
}

ConnectionManager::~ConnectionManager() {
  agents_.reset();  // no more MADs
  {
    kernel::SpinLockGuard guard(lock_);
    closing_ = true;
  }
  kernel::KeCancelTimer(&timer_);
  kernel::KeFlushQueuedDpcs(al_->node);
  Work work;
  {
    kernel::SpinLockGuard guard(lock_);
    std::vector<CepObj*> left;
    for (auto& [id, cep] : by_local_) left.push_back(cep);
    for (CepObj* cep : left) RemoveLocked(cep, work);
    listens_.clear();
  }
  work.sends.clear();
  work.events.clear();
}

// ---- Tables ------------------------------------------------------------------------------

void ConnectionManager::InsertLocked(CepObj* cep) {
  if (cep->in_tables) by_local_.erase(cep->local_id);
  do {
    cep->local_id = next_id_++;
  } while (cep->local_id == 0 || by_local_.contains(cep->local_id));
  by_local_[cep->local_id] = cep;
  if (!cep->in_tables) kernel::ReferenceObject(cep);
  cep->in_tables = true;
}

void ConnectionManager::InsertRemoteLocked(CepObj* cep) {
  by_remote_[{cep->remote_id, cep->remote_ca_guid}] = cep;
  by_remote_qp_.emplace(std::pair{cep->remote_ca_guid, cep->remote_qpn}, cep);
}

void ConnectionManager::RemoveLocked(CepObj* cep, Work& work) {
  DisarmLocked(cep);
  cep->state = CepState::IDLE;
  cep->has_last = false;
  if (!cep->in_tables) return;
  by_local_.erase(cep->local_id);
  auto remote = by_remote_.find({cep->remote_id, cep->remote_ca_guid});
  if (remote != by_remote_.end() && remote->second == cep) by_remote_.erase(remote);
  auto [first, last] = by_remote_qp_.equal_range({cep->remote_ca_guid, cep->remote_qpn});
  for (auto it = first; it != last; ++it) {
    if (it->second == cep) {
      by_remote_qp_.erase(it);
      break;
    }
  }
  auto sidr = sidr_by_remote_.find({cep->remote_id, cep->sidr_slid});
  if (sidr != sidr_by_remote_.end() && sidr->second == cep) sidr_by_remote_.erase(sidr);
  cep->in_tables = false;
  work.released.emplace_back(cep);  // the tables' reference, dropped after the lock
}

CepObj* ConnectionManager::FindLocalLocked(uint32_t local_id) {
  auto it = by_local_.find(local_id);
  return it == by_local_.end() ? nullptr : it->second;
}

CepObj* ConnectionManager::FindRemoteLocked(uint32_t remote_id, uint64_t remote_ca_guid) {
  auto it = by_remote_.find({remote_id, remote_ca_guid});
  return it == by_remote_.end() ? nullptr : it->second;
}

CepObj* ConnectionManager::FindListenLocked(uint64_t service_id, uint64_t port_guid,
                                            std::span<const uint8_t> private_data) {
  for (CepObj* listen : listens_) {
    if (listen->listen_service_id != service_id) continue;
    if (listen->listen_port_guid != 0 && listen->listen_port_guid != port_guid) continue;
    const std::size_t end = listen->compare_offset + listen->compare.size();
    if (end > private_data.size()) continue;
    if (!std::equal(listen->compare.begin(), listen->compare.end(),
                    private_data.begin() + listen->compare_offset)) {
      continue;
    }
    return listen;
  }
  return nullptr;
}

CepObj* ConnectionManager::NewCepLocked(CepObj* listen) {
  auto* cep = new CepObj(listen->owner(), this, listen->context);
  if (listen->parent() == nullptr || cep->SetParent(listen->parent()) != Status::SUCCESS) {
    kernel::DereferenceObject(cep);
    return nullptr;
  }
  return cep;
}

void ConnectionManager::OfferCepLocked(CepObj* listen, CepObj* cep, abi::CepEventType type,
                                       std::span<const uint8_t> mad, Work& work) {
  CepEvent event;
  event.type = type;
  event.new_cep = kernel::ObjectRef(cep);  // the creator's reference
  std::copy_n(mad.begin(), std::min(mad.size(), event.mad.size()), event.mad.begin());
  listen->Enqueue(std::move(event));
  kernel::ReferenceObject(listen);
  work.pumps.emplace_back(listen);
}

// ---- Sending and events --------------------------------------------------------------------

// A message of `cep` to its peer's QP1; kept for retries and duplicates unless `keep` is
// false. The TID's low half is the local communication ID (Linux's choice).
void ConnectionManager::SendLocked(CepObj* cep, uint16_t attribute,
                                   std::span<const uint8_t> message, Work& work, bool keep) {
  const auto mad = CmMad(attribute, cep->local_id, message);
  if (keep) {
    cep->last = mad;
    cep->has_last = true;
  }
  work.sends.push_back({cep->ca, cep->port, cep->peer_cm, mad});
}

void ConnectionManager::Event(CepObj* cep, abi::CepEventType type, std::span<const uint8_t> mad,
                              Work& work) {
  CepEvent event;
  event.type = type;
  std::copy_n(mad.begin(), std::min(mad.size(), event.mad.size()), event.mad.begin());
  kernel::ReferenceObject(cep);
  work.events.emplace_back(kernel::ObjectRef(cep), std::move(event));
}

void ConnectionManager::Flush(Work& work) {
  for (auto& send : work.sends) {
    GsiAgentRef agent = agents_ ? agents_->Find(send.ca->guid, send.port) : GsiAgentRef();
    if (agent) (void)agent->Send(send.to, send.mad, {}, {});
  }
  for (auto& [cep, event] : work.events) static_cast<CepObj*>(cep.get())->Post(std::move(event));
  for (auto& listen : work.pumps) static_cast<CepObj*>(listen.get())->Pump();
  work.released.clear();
}

// ---- Receiving -----------------------------------------------------------------------------

void ConnectionManager::OnMad(GsiAgent& agent, std::span<const uint8_t> mad,
                              const MadOrigin& origin) {
  if (mad.size() < 256 || mad[3] != kMethodSend) return;
  const uint16_t attribute = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
  abi::PortAttributes port{};
  const bool needs_port = attribute == softib::mad::ConnectRequest::kAttributeId ||
                          attribute == softib::mad::ServiceIDResReq::kAttributeId;
  if (needs_port && !QueryPort(agent.ca(), agent.port(), &port)) {
    return;
  }
  Work work;
  {
    kernel::SpinLockGuard guard(lock_);
    if (closing_) return;
    switch (attribute) {
      case softib::mad::ConnectRequest::kAttributeId:
        OnReqLocked(agent, mad, origin, port, work);
        break;
      case softib::mad::ConnectReply::kAttributeId:
        OnRepLocked(mad, work);
        break;
      case softib::mad::ReadyToUse::kAttributeId:
        OnRtuLocked(mad, work);
        break;
      case softib::mad::MsgRcptAck::kAttributeId:
        OnMraLocked(mad, work);
        break;
      case softib::mad::ConnectReject::kAttributeId:
        OnRejLocked(mad, work);
        break;
      case softib::mad::DisconnectRequest::kAttributeId:
        OnDreqLocked(agent, mad, origin, work);
        break;
      case softib::mad::DisconnectReply::kAttributeId:
        OnDrepLocked(mad, work);
        break;
      case softib::mad::LoadAlternatePath::kAttributeId:
        OnLapLocked(mad, work);
        break;
      case softib::mad::AlternatePathResponse::kAttributeId:
        OnAprLocked(mad, work);
        break;
      case softib::mad::ServiceIDResReq::kAttributeId:
        OnSidrReqLocked(agent, mad, origin, port, work);
        break;
      case softib::mad::ServiceIDResReqResp::kAttributeId:
        OnSidrRepLocked(mad, work);
        break;
      default:
        break;
    }
  }
  Flush(work);
}

// ---- Listen and the end of a handle --------------------------------------------------------

Status ConnectionManager::Listen(CepObj* cep, const abi::CepListenIn& in) {
  if (in.compare_length > abi::kCepReqPdataMax ||
      in.compare_offset + in.compare_length > abi::kCepReqPdataMax) {
    return Status::INVALID_SETTING;
  }
  kernel::SpinLockGuard guard(lock_);
  if (cep->state != CepState::IDLE) return Status::INVALID_STATE;
  const uint64_t service_id = be64toh(in.service_id);
  const uint64_t port_guid = be64toh(in.port_guid);
  std::vector<uint8_t> compare(in.compare_data, in.compare_data + in.compare_length);
  for (CepObj* other : listens_) {
    if (other->listen_service_id != service_id) continue;
    if (other->listen_port_guid != 0 && port_guid != 0 && other->listen_port_guid != port_guid) {
      continue;
    }
    if (other->compare == compare && other->compare_offset == in.compare_offset) {
      return Status::INVALID_SETTING;  // the same listen twice
    }
    if (other->compare.empty() || compare.empty()) return Status::INVALID_SETTING;
  }
  cep->listen_service_id = service_id;
  cep->listen_port_guid = port_guid;
  cep->compare = std::move(compare);
  cep->compare_offset = in.compare_offset;
  cep->state = CepState::LISTEN;
  listens_.insert(cep);
  return Status::SUCCESS;
}

void ConnectionManager::OnCepDestroyed(CepObj* cep) {
  Work work;
  {
    kernel::SpinLockGuard guard(lock_);
    switch (cep->state) {
      case CepState::LISTEN:
        listens_.erase(cep);
        cep->state = CepState::IDLE;
        break;
      case CepState::REQ_SENT:
      case CepState::MRA_REQ_RCVD: {
        // As Linux: the peer hears a timeout, with our CA GUID as the ARI.
        uint8_t ari[8];
        const uint64_t guid = htobe64(cep->ca->guid);
        std::memcpy(ari, &guid, sizeof(ari));
        SendRejLocked(cep, static_cast<uint16_t>(softib::mad::CmRejReason::TIMEOUT), ari, {}, work);
        RemoveLocked(cep, work);
        break;
      }
      case CepState::REQ_RCVD:
      case CepState::MRA_REQ_SENT:
      case CepState::REP_SENT:
      case CepState::MRA_REP_RCVD:
        SendRejLocked(cep, static_cast<uint16_t>(softib::mad::CmRejReason::CONSUMER_REJECT), {}, {},
                      work);
        RemoveLocked(cep, work);
        break;
      case CepState::REP_RCVD:
      case CepState::MRA_REP_SENT:
        SendRejLocked(cep, static_cast<uint16_t>(softib::mad::CmRejReason::CONSUMER_REJECT), {}, {},
                      work);
        RemoveLocked(cep, work);
        break;
      case CepState::ESTABLISHED:
        SendDreqLocked(cep, {}, work);  // the CM keeps it through DREQ and time-wait
        break;
      case CepState::DREQ_RCVD:
        SendDrepLocked(cep, {}, work);
        break;
      case CepState::SIDR_REQ_SENT:
        RemoveLocked(cep, work);
        break;
      case CepState::SIDR_REQ_RCVD:  // nobody will answer: the requester hears "rejected"
        SendSidrRepLocked(cep, static_cast<uint8_t>(softib::mad::CmSidrStatus::REJECTED), 0, 0, {},
                          {}, work);
        RemoveLocked(cep, work);
        break;
      case CepState::IDLE:
      case CepState::DREQ_SENT:
      case CepState::TIMEWAIT:
        break;
    }
  }
  Flush(work);
}

}  // namespace softib::al::cm
