// The active side (IBA 12.9.5): REQ out with the QP's attributes and the paths, REP in
// (duplicates answered with the RTU again), RTU out.
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

bool AllZero(std::span<const uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

Status ConnectionManager::CheckReq(QpObj* qp, const abi::CmReqParams& p) {
  if (qp->type != abi::QpType::RC && qp->type != abi::QpType::UC) {
    return Status::INVALID_SERVICE_TYPE;
  }
  if (p.max_cm_retries > 15 || p.remote_cm_response_timeout > 31 ||
      p.local_cm_response_timeout > 31 || p.retry_count > 7 || p.rnr_retry_count > 7 ||
      p.starting_psn > 0xFFFFFF) {
    return Status::INVALID_SETTING;
  }
  return Status::SUCCESS;
}

Status ConnectionManager::SendReq(CepObj* cep, QpObj* qp, const abi::CmReqParams& p,
                                  std::span<const uint8_t> private_data,
                                  const abi::QpAttributes& qa) {
  std::shared_ptr<AlCa> ca = qp->pd_obj->ca_obj->ca;
  if (qa.state != abi::QpState::INIT) return Status::INVALID_QP_STATE;
  abi::PortAttributes port;
  if (!QueryPort(ca.get(), qa.port_num, &port)) return Status::INVALID_SETTING;
  if (port.link_state != 4) return Status::INVALID_PORT_STATE;
  CepPath primary, alternate;
  wire::PathRecord pri, alt;
  if (!PathOfRecord(ca.get(), qa.port_num, p.primary_path, &primary, &pri)) {
    return Status::INVALID_SETTING;
  }
  const bool has_alternate = !AllZero(p.alternate_path);
  // The alternate path may leave by another port: the one its SLID names.
  if (has_alternate && !PathOfRecord(ca.get(), 0, p.alternate_path, &alternate, &alt)) {
    return Status::INVALID_SETTING;
  }

  wire::ConnectRequest req;
  req.ServiceID = be64toh(p.service_id);
  req.LocalCAGUID = ca->guid;
  req.LocalQPN = qp->qp_num;
  req.ResponderResources = p.responder_resources;
  req.InitiatorDepth = p.initiator_depth;
  req.RemoteCMResponseTimeout = p.remote_cm_response_timeout;
  req.TransportServiceType =
      static_cast<uint8_t>(qp->type == abi::QpType::RC ? wire::CmTransportServiceType::RC
                                                       : wire::CmTransportServiceType::UC);
  req.EndToEndFlowControl = p.flow_control ? 1 : 0;
  req.StartingPSN = p.starting_psn;
  req.LocalCMResponseTimeout = p.local_cm_response_timeout;
  req.RetryCount = p.retry_count;
  req.PartitionKey = pri.P_Key;
  req.PathPacketPayloadMTU = pri.MTU;
  req.RNRRetryCount = p.rnr_retry_count;
  req.MaxCMRetries = p.max_cm_retries;
  req.SRQ = qp->srq != nullptr ? 1 : 0;
  req.PrimaryLocalPortLID = pri.SLID;
  req.PrimaryRemotePortLID = pri.DLID;
  req.PrimaryLocalPortGID = pri.SGID;
  req.PrimaryRemotePortGID = pri.DGID;
  req.PrimaryFlowLabel = pri.FlowLabel;
  req.PrimaryPacketRate = pri.Rate;
  req.PrimaryTrafficClass = pri.TClass;
  req.PrimaryHopLimit = pri.HopLimit;
  req.PrimarySL = pri.SL;
  req.PrimarySubnetLocal = pri.HopLimit <= 1 ? 1 : 0;
  req.PrimaryLocalACKTimeout = primary.local_ack_timeout;
  if (has_alternate) FillAlternate(&req, alt, alternate);
  std::copy(private_data.begin(), private_data.end(), req.PrivateData.begin());

  return Locked([&](Work& work) {
    if (cep->state != CepState::IDLE || closing_) return Status::INVALID_STATE;
    cep->ca = ca;
    cep->port = qa.port_num;
    cep->service_id = req.ServiceID;
    cep->qp_type = qp->type;
    cep->local_qpn = qp->qp_num;
    cep->sq_psn = p.starting_psn;
    cep->responder_resources = p.responder_resources;
    cep->initiator_depth = p.initiator_depth;
    cep->retry_count = p.retry_count;
    cep->rnr_retry_count = p.rnr_retry_count;
    cep->max_cm_retries = p.max_cm_retries;
    cep->peer_response_timeout = p.remote_cm_response_timeout;
    cep->primary = primary;
    cep->alternate = alternate;
    cep->has_alternate = has_alternate;
    cep->remote_id = 0;
    cep->remote_ca_guid = 0;
    cep->peer_cm = PeerCmOf(primary);
    InsertLocked(cep);
    req.LocalCommunicationID = cep->local_id;
    cep->state = CepState::REQ_SENT;
    SendLocked(cep, wire::ConnectRequest::kAttributeId, req.Pack(), work);
    ArmLocked(cep, CepTimer::REQ,
              CmTime(primary.packet_life_time) * 2 + CmTime(p.remote_cm_response_timeout),
              p.max_cm_retries);
    return Status::SUCCESS;
  });
}

void ConnectionManager::OnRepLocked(std::span<const uint8_t> mad, Work& work) {
  wire::ConnectReply rep;
  CepObj* cep = AddressedLocked(mad, &rep);
  if (cep == nullptr) return;
  switch (cep->state) {
    case CepState::REQ_SENT:
    case CepState::MRA_REQ_RCVD:
      break;
    case CepState::ESTABLISHED:   // our RTU was lost: send it again
    case CepState::MRA_REP_SENT:  // our MRA was lost
      if (cep->remote_id == rep.LocalCommunicationID && cep->has_last) {
        work.sends.push_back({cep->ca, cep->port, cep->peer_cm, cep->last});
        resent.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    default:
      return;
  }
  if (FindRemoteLocked(rep.LocalCommunicationID, rep.LocalCAGUID) != nullptr) {
    // The peer's ID is in use by another connection of ours: stale (IBA 12.9.8.3).
    cep->remote_id = rep.LocalCommunicationID;
    SendRejLocked(cep, static_cast<uint16_t>(wire::CmRejReason::STALE_CONNECTION), {}, {}, work);
    Event(cep, abi::CepEventType::REJ_RECEIVED, cep->last, work);
    EnterTimewaitLocked(cep, work);
    return;
  }
  DisarmLocked(cep);
  cep->remote_id = rep.LocalCommunicationID;
  cep->remote_ca_guid = rep.LocalCAGUID;
  cep->remote_qpn = rep.LocalQPN;
  cep->rq_psn = rep.StartingPSN;
  // The REP settles RDMA reads both ways: what the peer accepts is what we may issue.
  cep->initiator_depth = std::min(cep->initiator_depth, rep.ResponderResources);
  cep->responder_resources = rep.InitiatorDepth;
  cep->rnr_retry_count = rep.RNRRetryCount;
  InsertRemoteLocked(cep);
  cep->state = CepState::REP_RCVD;
  Event(cep, abi::CepEventType::REP_RECEIVED, mad, work);
}

Status ConnectionManager::SendRtu(CepObj* cep, std::span<const uint8_t> private_data) {
  return Locked([&](Work& work) {
    if (cep->state != CepState::REP_RCVD && cep->state != CepState::MRA_REP_SENT) {
      return Status::INVALID_STATE;
    }
    wire::ReadyToUse rtu;
    rtu.LocalCommunicationID = cep->local_id;
    rtu.RemoteCommunicationID = cep->remote_id;
    std::copy(private_data.begin(), private_data.end(), rtu.PrivateData.begin());
    SendLocked(cep, wire::ReadyToUse::kAttributeId, rtu.Pack(), work);
    cep->state = CepState::ESTABLISHED;
    return Status::SUCCESS;
  });
}

}  // namespace softib::al::cm
