// Disconnection (IBA 12.9.7): DREQ out (retried, then DREQ_TIMEOUT), DREQ in (a DREP for
// what we no longer know), DREP out and in, and time-wait.
#include <algorithm>

#include "runtime/al/src/cm/cm.h"
#include "runtime/al/src/cm/cm_wire.h"
#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

using kernel::Status;
namespace wire = softib::mad;

void ConnectionManager::SendDreqLocked(CepObj* cep, std::span<const uint8_t> private_data,
                                       Work& work) {
  wire::DisconnectRequest dreq;
  dreq.LocalCommunicationID = cep->local_id;
  dreq.RemoteCommunicationID = cep->remote_id;
  dreq.RemoteQPNEECN = cep->remote_qpn;
  std::copy(private_data.begin(), private_data.end(), dreq.PrivateData.begin());
  SendLocked(cep, wire::DisconnectRequest::kAttributeId, dreq.Pack(), work);
  cep->state = CepState::DREQ_SENT;
  cep->lap_state = LapState::IDLE;  // a LAP in progress ends with the connection
  ArmLocked(cep, CepTimer::DREQ,
            CmTime(cep->primary.packet_life_time) * 2 + CmTime(cep->peer_response_timeout),
            cep->max_cm_retries);
}

void ConnectionManager::SendDrepLocked(CepObj* cep, std::span<const uint8_t> private_data,
                                       Work& work) {
  wire::DisconnectReply drep;
  drep.LocalCommunicationID = cep->local_id;
  drep.RemoteCommunicationID = cep->remote_id;
  std::copy(private_data.begin(), private_data.end(), drep.PrivateData.begin());
  SendLocked(cep, wire::DisconnectReply::kAttributeId, drep.Pack(), work);
  EnterTimewaitLocked(cep, work);
}

// Time-wait: the QP's packets may still be in the fabric for twice the packet lifetime
// plus the local ACK timeout; the QP and the IDs are not reused before it ends.
void ConnectionManager::EnterTimewaitLocked(CepObj* cep, Work&) {
  cep->state = CepState::TIMEWAIT;
  ArmLocked(cep, CepTimer::TIMEWAIT,
            CmTime(cep->primary.packet_life_time) * 2 + CmTime(cep->primary.local_ack_timeout), 0);
}

Status ConnectionManager::SendDreq(CepObj* cep, std::span<const uint8_t> private_data) {
  return Locked([&](Work& work) {
    if (cep->state != CepState::ESTABLISHED) return Status::INVALID_STATE;
    SendDreqLocked(cep, private_data, work);
    return Status::SUCCESS;
  });
}

Status ConnectionManager::SendDrep(CepObj* cep, std::span<const uint8_t> private_data) {
  return Locked([&](Work& work) {
    if (cep->state != CepState::DREQ_RCVD) return Status::INVALID_STATE;
    SendDrepLocked(cep, private_data, work);
    return Status::SUCCESS;
  });
}

void ConnectionManager::OnDreqLocked(GsiAgent& agent, std::span<const uint8_t> mad,
                                     const MadOrigin& origin, Work& work) {
  wire::DisconnectRequest dreq;
  CepObj* cep = AddressedLocked(mad, &dreq);
  const bool ours = cep != nullptr && cep->remote_id == dreq.LocalCommunicationID &&
                    cep->local_qpn == dreq.RemoteQPNEECN;
  if (!ours || cep->state == CepState::TIMEWAIT) {
    // Gone or going: the peer still gets its DREP (our earlier one may have been lost).
    std::shared_ptr<AlCa> ca = al_->FindCa(agent.ca()->guid);
    if (!ca) return;
    wire::DisconnectReply drep;
    drep.LocalCommunicationID = dreq.RemoteCommunicationID;
    drep.RemoteCommunicationID = dreq.LocalCommunicationID;
    const MadAddress back = ReturnAddress(origin);
    resent.fetch_add(1, std::memory_order_relaxed);
    work.sends.push_back(
        {ca, agent.port(), back,
         CmMad(wire::DisconnectReply::kAttributeId, drep.LocalCommunicationID, drep.Pack())});
    return;
  }
  switch (cep->state) {
    case CepState::ESTABLISHED:
    case CepState::REP_SENT:  // the RTU was lost; the peer is established
    case CepState::MRA_REP_RCVD:
    case CepState::DREQ_SENT:  // both ends disconnect at once
      DisarmLocked(cep);
      cep->state = CepState::DREQ_RCVD;
      cep->lap_state = LapState::IDLE;
      Event(cep, abi::CepEventType::DREQ_RECEIVED, mad, work);
      if (cep->destroyed()) SendDrepLocked(cep, {}, work);  // nobody left to answer
      break;
    default:
      break;
  }
}

void ConnectionManager::OnDrepLocked(std::span<const uint8_t> mad, Work& work) {
  wire::DisconnectReply drep;
  CepObj* cep = AddressedLocked(mad, &drep);
  if (cep == nullptr || cep->remote_id != drep.LocalCommunicationID) return;
  if (cep->state != CepState::DREQ_SENT) return;
  Event(cep, abi::CepEventType::DREP_RECEIVED, mad, work);
  EnterTimewaitLocked(cep, work);
}

}  // namespace softib::al::cm
