// The passive side (IBA 12.9.6): REQ in (duplicates, stale connections, the listen that
// takes it and the new CEP reported on it), REP out, RTU in, and MRA both ways.
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "runtime/al/src/cm/cm.h"
#include "runtime/al/src/cm/cm_wire.h"
#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

using kernel::Status;
namespace wire = softib::mad;

namespace {

// The primary path as the passive side sees it: the REQ's, reversed.
CepPath PassivePath(const wire::ConnectRequest& req, const abi::PortAttributes& port,
                    uint8_t port_num, uint16_t pkey_index) {
  CepPath path;
  path.av.port_num = port_num;
  path.av.dlid = req.PrimaryLocalPortLID;
  path.av.sl = req.PrimarySL;
  path.av.src_path_bits =
      static_cast<uint8_t>((req.PrimaryRemotePortLID - port.lid) & ((1u << port.lmc) - 1));
  path.av.static_rate = req.PrimaryPacketRate;
  path.av.grh_present = req.PrimarySubnetLocal ? 0 : 1;
  std::memcpy(path.av.grh.dgid.raw, req.PrimaryLocalPortGID.data(), 16);
  path.av.grh.flow_label = req.PrimaryFlowLabel;
  path.av.grh.hop_limit = req.PrimaryHopLimit;
  path.av.grh.traffic_class = req.PrimaryTrafficClass;
  path.mtu = req.PathPacketPayloadMTU;
  path.local_ack_timeout = req.PrimaryLocalACKTimeout;
  path.packet_life_time = static_cast<uint8_t>(std::max(0, req.PrimaryLocalACKTimeout - 1));
  path.pkey = req.PartitionKey;
  path.pkey_index = pkey_index;
  return path;
}

}  // namespace

void ConnectionManager::OnReqLocked(GsiAgent& agent, std::span<const uint8_t> mad,
                                    const MadOrigin& origin, const abi::PortAttributes& port,
                                    Work& work) {
  wire::ConnectRequest req;
  if (!req.Unpack(CmMessage(mad)) || req.LocalCommunicationID == 0) return;
  std::shared_ptr<AlCa> ca = al_->FindCa(agent.ca()->guid);
  if (!ca) return;
  const MadAddress back = ReturnAddress(origin);
  const auto reject = [&](wire::CmRejReason reason) {
    RejectUnknownLocked(ca, agent.port(), back, 0, req.LocalCommunicationID, 0,
                        static_cast<uint16_t>(reason), work);
  };
  // A REQ we know: a retry whose answer was lost, or a connection the peer forgot.
  if (CepObj* dup = FindRemoteLocked(req.LocalCommunicationID, req.LocalCAGUID)) {
    switch (dup->state) {
      case CepState::MRA_REQ_SENT:  // the MRA again
      case CepState::REP_SENT:      // the REP again
      case CepState::MRA_REP_RCVD:
        if (dup->has_last) {
          work.sends.push_back({dup->ca, dup->port, dup->peer_cm, dup->last});
          resent.fetch_add(1, std::memory_order_relaxed);
        }
        break;
      case CepState::ESTABLISHED:
      case CepState::DREQ_SENT:
      case CepState::DREQ_RCVD:
      case CepState::TIMEWAIT:
        reject(wire::CmRejReason::STALE_CONNECTION);
        if (dup->state == CepState::ESTABLISHED) SendDreqLocked(dup, {}, work);
        break;
      default:  // REQ_RCVD: the consumer has not answered yet
        break;
    }
    return;
  }
  // A new REQ from a QP we are connected to: that connection is stale (IBA 12.9.8.3.1).
  auto [first, last] = by_remote_qp_.equal_range({req.LocalCAGUID, req.LocalQPN});
  for (auto it = first; it != last; ++it) {
    CepObj* cep = it->second;
    if (cep->state == CepState::ESTABLISHED) {
      reject(wire::CmRejReason::STALE_CONNECTION);
      SendDreqLocked(cep, {}, work);
      return;
    }
  }
  if (req.TransportServiceType != static_cast<uint8_t>(wire::CmTransportServiceType::RC) &&
      req.TransportServiceType != static_cast<uint8_t>(wire::CmTransportServiceType::UC)) {
    reject(wire::CmRejReason::INVALID_TRANSPORT_TYPE);
    return;
  }
  CepObj* listen = FindListenLocked(req.ServiceID, be64toh(port.port_guid), req.PrivateData);
  if (listen == nullptr) {
    reject(wire::CmRejReason::INVALID_SERVICE_ID);
    return;
  }
  // An alternate path must end at one of our ports (IBA 12.7.x: REJ "invalid alternate LID").
  CepPath alternate;
  const bool has_alternate = req.AlternateLocalPortLID != 0;
  if (has_alternate && !ReceivedAlternate(ca.get(), req, req.PartitionKey, &alternate)) {
    reject(wire::CmRejReason::INVALID_ALT_LID);
    return;
  }
  alternate.mtu = req.PathPacketPayloadMTU;
  uint16_t pkey_index = origin.wc.pkey_index;
  (void)FindPkeyIndex(ca.get(), agent.port(), req.PartitionKey, &pkey_index);

  CepObj* cep = NewCepLocked(listen);
  if (cep == nullptr) return;
  cep->ca = ca;
  cep->port = agent.port();
  cep->service_id = req.ServiceID;
  cep->qp_type = req.TransportServiceType == 0 ? abi::QpType::RC : abi::QpType::UC;
  cep->remote_id = req.LocalCommunicationID;
  cep->remote_ca_guid = req.LocalCAGUID;
  cep->remote_qpn = req.LocalQPN;
  cep->rq_psn = req.StartingPSN;
  cep->responder_resources = req.InitiatorDepth;
  cep->initiator_depth = req.ResponderResources;
  cep->retry_count = req.RetryCount;
  cep->rnr_retry_count = req.RNRRetryCount;
  cep->max_cm_retries = req.MaxCMRetries;
  cep->peer_response_timeout = req.LocalCMResponseTimeout;
  cep->primary = PassivePath(req, port, agent.port(), pkey_index);
  cep->alternate = alternate;
  cep->has_alternate = has_alternate;
  cep->peer_cm = back;
  InsertLocked(cep);
  InsertRemoteLocked(cep);
  cep->state = CepState::REQ_RCVD;
  OfferCepLocked(listen, cep, abi::CepEventType::REQ_RECEIVED, mad, work);
}

Status ConnectionManager::CheckRep(const abi::CmRepParams& p) {
  if (p.starting_psn > 0xFFFFFF || p.rnr_retry_count > 7 || p.target_ack_delay > 31) {
    return Status::INVALID_SETTING;
  }
  return Status::SUCCESS;
}

Status ConnectionManager::SendRep(CepObj* cep, QpObj* qp, const abi::CmRepParams& p,
                                  std::span<const uint8_t> private_data,
                                  const abi::QpAttributes& qa) {
  std::shared_ptr<AlCa> ca = qp->pd_obj->ca_obj->ca;
  return Locked([&](Work& work) {
    if (cep->state != CepState::REQ_RCVD && cep->state != CepState::MRA_REQ_SENT) {
      return Status::INVALID_STATE;
    }
    if (qp->type != cep->qp_type) return Status::INVALID_SERVICE_TYPE;
    // INIT, or RTR already (with CepGetRtrAttributes: the order Linux's rdma_accept uses).
    if (qa.state != abi::QpState::INIT && qa.state != abi::QpState::RTR) {
      return Status::INVALID_QP_STATE;
    }
    if (ca != cep->ca || qa.port_num != cep->port) return Status::INVALID_SETTING;
    cep->local_qpn = qp->qp_num;
    cep->sq_psn = p.starting_psn;
    cep->responder_resources = p.responder_resources;
    cep->initiator_depth = p.initiator_depth;
    wire::ConnectReply rep;
    rep.LocalCommunicationID = cep->local_id;
    rep.RemoteCommunicationID = cep->remote_id;
    rep.LocalQPN = qp->qp_num;
    rep.StartingPSN = p.starting_psn;
    rep.ResponderResources = p.responder_resources;
    rep.InitiatorDepth = p.initiator_depth;
    rep.TargetACKDelay = p.target_ack_delay;
    rep.FailoverAccepted = static_cast<uint8_t>(p.failover);
    rep.EndToEndFlowControl = p.flow_control ? 1 : 0;
    rep.RNRRetryCount = p.rnr_retry_count;
    rep.SRQ = p.srq ? 1 : 0;
    rep.LocalCAGUID = ca->guid;
    std::copy(private_data.begin(), private_data.end(), rep.PrivateData.begin());
    SendLocked(cep, wire::ConnectReply::kAttributeId, rep.Pack(), work);
    cep->state = CepState::REP_SENT;
    ArmLocked(cep, CepTimer::REP,
              CmTime(cep->primary.packet_life_time) * 2 + CmTime(cep->peer_response_timeout),
              cep->max_cm_retries);
    return Status::SUCCESS;
  });
}

void ConnectionManager::OnRtuLocked(std::span<const uint8_t> mad, Work& work) {
  wire::ReadyToUse rtu;
  CepObj* cep = AddressedLocked(mad, &rtu);
  if (cep == nullptr || cep->remote_id != rtu.LocalCommunicationID) return;
  if (cep->state != CepState::REP_SENT && cep->state != CepState::MRA_REP_RCVD) return;
  DisarmLocked(cep);
  cep->state = CepState::ESTABLISHED;
  Event(cep, abi::CepEventType::RTU_RECEIVED, mad, work);
}

Status ConnectionManager::SendMra(CepObj* cep, uint8_t service_timeout,
                                  std::span<const uint8_t> private_data) {
  return Locked([&](Work& work) {
    wire::MsgRcptAck mra;
    if (cep->state == CepState::REQ_RCVD) {
      mra.MessageMRAed = static_cast<uint8_t>(wire::CmMraMessage::REQ);
      cep->state = CepState::MRA_REQ_SENT;
    } else if (cep->state == CepState::REP_RCVD) {
      mra.MessageMRAed = static_cast<uint8_t>(wire::CmMraMessage::REP);
      cep->state = CepState::MRA_REP_SENT;
    } else if (!SendMraLapLocked(cep, &mra)) {
      return Status::INVALID_STATE;
    }
    mra.LocalCommunicationID = cep->local_id;
    mra.RemoteCommunicationID = cep->remote_id;
    mra.ServiceTimeout = std::min<uint8_t>(service_timeout, 31);
    std::copy(private_data.begin(), private_data.end(), mra.PrivateData.begin());
    if (cep->lap_state == LapState::MRA_LAP_SENT) {
      SendLapExchangeLocked(cep, wire::MsgRcptAck::kAttributeId, mra.Pack(), work);
    } else {
      SendLocked(cep, wire::MsgRcptAck::kAttributeId, mra.Pack(), work);
    }
    return Status::SUCCESS;
  });
}

// The peer needs more time: our retry waits the packet lifetime plus its service timeout.
void ConnectionManager::OnMraLocked(std::span<const uint8_t> mad, Work& work) {
  wire::MsgRcptAck mra;
  CepObj* cep = AddressedLocked(mad, &mra);
  if (cep == nullptr) return;
  const auto message = static_cast<wire::CmMraMessage>(mra.MessageMRAed);
  if (message == wire::CmMraMessage::REQ && cep->state == CepState::REQ_SENT) {
    cep->state = CepState::MRA_REQ_RCVD;
  } else if (message == wire::CmMraMessage::REP && cep->state == CepState::REP_SENT &&
             cep->remote_id == mra.LocalCommunicationID) {
    cep->state = CepState::MRA_REP_RCVD;
  } else if (!OnMraLapLocked(cep, mra)) {
    return;
  }
  ArmLocked(cep, cep->timer, CmTime(cep->primary.packet_life_time) + CmTime(mra.ServiceTimeout),
            cep->retries_left);
  Event(cep, abi::CepEventType::MRA_RECEIVED, mad, work);
}

}  // namespace softib::al::cm
