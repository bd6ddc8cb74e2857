// Alternate path loading (IBA 12.8, the LAP sub-states of 12.9.6): on an established
// connection one side proposes a new alternate path (LAP), the other accepts or refuses it
// (APR); MRA may ask for more time; an unanswered LAP is sent again while MaxCMRetries
// lasts, then LAP_TIMEOUT. An accepted path becomes the CEP's alternate: the RTS attributes
// then load it into the QP (RTS -> RTS, ALT_PATH and path migration state REARM).
#include <algorithm>

#include "runtime/al/src/cm/cm.h"
#include "runtime/al/src/cm/cm_wire.h"
#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

using kernel::Status;
namespace wire = softib::mad;

Status ConnectionManager::SendLap(CepObj* cep, std::span<const uint8_t> path,
                                  uint8_t response_timeout, std::span<const uint8_t> private_data) {
  if (response_timeout > 31) return Status::INVALID_SETTING;
  std::shared_ptr<AlCa> ca;
  {
    kernel::SpinLockGuard guard(lock_);
    ca = cep->ca;
  }
  if (!ca) return Status::INVALID_STATE;
  CepPath proposed;
  wire::PathRecord record;
  if (!PathOfRecord(ca.get(), 0, path, &proposed, &record)) return Status::INVALID_SETTING;
  return Locked([&](Work& work) {
    if (cep->state != CepState::ESTABLISHED || cep->lap_state != LapState::IDLE) {
      return Status::INVALID_STATE;
    }
    if (record.P_Key != cep->primary.pkey) return Status::INVALID_SETTING;
    proposed.mtu = cep->primary.mtu;
    wire::LoadAlternatePath lap;
    lap.LocalCommunicationID = cep->local_id;
    lap.RemoteCommunicationID = cep->remote_id;
    lap.RemoteQPNEECN = cep->remote_qpn;
    lap.RemoteCMResponseTimeout = response_timeout;
    FillAlternate(&lap, record, proposed);
    std::copy(private_data.begin(), private_data.end(), lap.PrivateData.begin());
    cep->proposed = proposed;
    cep->lap_state = LapState::LAP_SENT;
    SendLapExchangeLocked(cep, wire::LoadAlternatePath::kAttributeId, lap.Pack(), work);
    ArmLocked(cep, CepTimer::LAP,
              CmTime(cep->primary.packet_life_time) * 2 + CmTime(response_timeout),
              cep->max_cm_retries);
    return Status::SUCCESS;
  });
}

void ConnectionManager::OnLapLocked(std::span<const uint8_t> mad, Work& work) {
  wire::LoadAlternatePath lap;
  CepObj* cep = AddressedLocked(mad, &lap);
  if (cep == nullptr || cep->remote_id != lap.LocalCommunicationID ||
      cep->state != CepState::ESTABLISHED) {
    return;
  }
  const auto message = CmMessage(mad);
  switch (cep->lap_state) {
    case LapState::IDLE:
      // A LAP answered already: its APR was lost, send it again.
      if (std::equal(cep->last_lap.begin(), cep->last_lap.end(), message.begin())) {
        work.sends.push_back({cep->ca, cep->port, cep->peer_cm, cep->lap_sent});
        resent.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      break;
    case LapState::MRA_LAP_SENT:  // our MRA was lost
      work.sends.push_back({cep->ca, cep->port, cep->peer_cm, cep->lap_sent});
      return;
    default:  // LAP_RCVD: the consumer has not answered; LAP_SENT: both sides at once
      return;
  }
  std::copy(message.begin(), message.end(), cep->last_lap.begin());
  CepPath proposed;
  wire::CmAprStatus refused = wire::CmAprStatus::SUCCESS;
  if (lap.RemoteQPNEECN != cep->local_qpn) {
    refused = wire::CmAprStatus::INVALID_QPN_EECN;
  } else if (!ReceivedAlternate(cep->ca.get(), lap, cep->primary.pkey, &proposed)) {
    refused = wire::CmAprStatus::INVALID_LID;
  }
  if (refused != wire::CmAprStatus::SUCCESS) {
    // The CM answers a path it cannot use itself; the consumer never sees it.
    wire::AlternatePathResponse apr;
    apr.LocalCommunicationID = cep->local_id;
    apr.RemoteCommunicationID = cep->remote_id;
    apr.APStatus = static_cast<uint8_t>(refused);
    SendLapExchangeLocked(cep, wire::AlternatePathResponse::kAttributeId, apr.Pack(), work);
    return;
  }
  proposed.mtu = cep->primary.mtu;
  cep->proposed = proposed;
  cep->peer_response_timeout = lap.RemoteCMResponseTimeout;
  cep->lap_state = LapState::LAP_RCVD;
  Event(cep, abi::CepEventType::LAP_RECEIVED, mad, work);
}

Status ConnectionManager::SendApr(CepObj* cep, uint8_t status, std::span<const uint8_t> info,
                                  std::span<const uint8_t> private_data) {
  if (info.size() > abi::kCepInfoBytes) return Status::INVALID_PARAMETER;
  return Locked([&](Work& work) {
    if (cep->state != CepState::ESTABLISHED ||
        (cep->lap_state != LapState::LAP_RCVD && cep->lap_state != LapState::MRA_LAP_SENT)) {
      return Status::INVALID_STATE;
    }
    wire::AlternatePathResponse apr;
    apr.LocalCommunicationID = cep->local_id;
    apr.RemoteCommunicationID = cep->remote_id;
    apr.AdditionalInfoLength = static_cast<uint8_t>(info.size());
    apr.APStatus = status;
    std::copy(info.begin(), info.end(), apr.AdditionalInfo.begin());
    std::copy(private_data.begin(), private_data.end(), apr.PrivateData.begin());
    SendLapExchangeLocked(cep, wire::AlternatePathResponse::kAttributeId, apr.Pack(), work);
    if (status == static_cast<uint8_t>(wire::CmAprStatus::SUCCESS)) {
      cep->alternate = cep->proposed;
      cep->has_alternate = true;
      cep->lap_loaded = true;
    }
    cep->lap_state = LapState::IDLE;
    return Status::SUCCESS;
  });
}

void ConnectionManager::OnAprLocked(std::span<const uint8_t> mad, Work& work) {
  wire::AlternatePathResponse apr;
  CepObj* cep = AddressedLocked(mad, &apr);
  if (cep == nullptr || cep->remote_id != apr.LocalCommunicationID ||
      cep->state != CepState::ESTABLISHED ||
      (cep->lap_state != LapState::LAP_SENT && cep->lap_state != LapState::MRA_LAP_RCVD)) {
    return;
  }
  DisarmLocked(cep);
  if (apr.APStatus == static_cast<uint8_t>(wire::CmAprStatus::SUCCESS)) {
    cep->alternate = cep->proposed;
    cep->has_alternate = true;
    cep->lap_loaded = true;
  }
  cep->lap_state = LapState::IDLE;
  Event(cep, abi::CepEventType::APR_RECEIVED, mad, work);
}

void ConnectionManager::SendLapExchangeLocked(CepObj* cep, uint16_t attribute,
                                              std::span<const uint8_t> message, Work& work) {
  cep->lap_sent = CmMad(attribute, cep->local_id, message);
  work.sends.push_back({cep->ca, cep->port, cep->peer_cm, cep->lap_sent});
}

bool ConnectionManager::SendMraLapLocked(CepObj* cep, wire::MsgRcptAck* mra) {
  if (cep->state != CepState::ESTABLISHED || cep->lap_state != LapState::LAP_RCVD) return false;
  mra->MessageMRAed = static_cast<uint8_t>(wire::CmMraMessage::LAP);
  cep->lap_state = LapState::MRA_LAP_SENT;
  return true;
}

bool ConnectionManager::OnMraLapLocked(CepObj* cep, const wire::MsgRcptAck& mra) {
  if (static_cast<wire::CmMraMessage>(mra.MessageMRAed) != wire::CmMraMessage::LAP ||
      cep->state != CepState::ESTABLISHED || cep->lap_state != LapState::LAP_SENT ||
      cep->remote_id != mra.LocalCommunicationID) {
    return false;
  }
  cep->lap_state = LapState::MRA_LAP_RCVD;
  return true;
}

}  // namespace softib::al::cm
