// Service ID resolution (IBA 12.11): a SIDR_REQ asks the node a path leads to which UD QP
// (and Q_Key) serves a service ID; a listen for that service gets SIDR_REQ_RECEIVED with a
// new CEP and answers with SIDR_REP; with no listen the CM answers "service ID not
// supported" itself. The requester sends again every timeout_ms while max_retries lasts,
// then SIDR_REQ_TIMEOUT. Either CEP is one-shot: it is back to IDLE after the answer.
#include <endian.h>

#include <algorithm>

#include "runtime/al/src/cm/cm.h"
#include "runtime/al/src/cm/cm_wire.h"
#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

using kernel::Status;
namespace wire = softib::mad;

namespace {

// The CA and port a path leaves from: the port whose GUID is the SGID's interface ID, or
// (SGID zero) whose LID is the SLID.
std::shared_ptr<AlCa> CaOfPath(AccessLayer* al, const wire::PathRecord& record, uint8_t* port) {
  uint64_t sgid_guid = 0;
  for (int i = 8; i < 16; ++i) sgid_guid = sgid_guid << 8 | record.SGID[i];
  for (const std::shared_ptr<AlCa>& ca : al->Cas()) {
    for (uint8_t p = 1; p <= ca->ci->num_ports(); ++p) {
      abi::PortAttributes attributes;
      if (!QueryPort(ca.get(), p, &attributes)) continue;
      const bool match = sgid_guid != 0 ? be64toh(attributes.port_guid) == sgid_guid
                                        : attributes.lid == record.SLID;
      if (match) {
        *port = p;
        return ca;
      }
    }
  }
  return nullptr;
}

}  // namespace

Status ConnectionManager::SendSidrReq(CepObj* cep, uint64_t service_id,
                                      std::span<const uint8_t> path, uint32_t timeout_ms,
                                      uint32_t max_retries, std::span<const uint8_t> private_data) {
  if (timeout_ms == 0 || max_retries > 15) return Status::INVALID_SETTING;
  wire::PathRecord record;
  if (!record.Unpack(path)) return Status::INVALID_SETTING;
  uint8_t port_num = 0;
  std::shared_ptr<AlCa> ca = CaOfPath(al_, record, &port_num);
  if (!ca) return Status::INVALID_SETTING;
  CepPath target;
  if (!PathOfRecord(ca.get(), port_num, path, &target, &record)) return Status::INVALID_SETTING;
  abi::PortAttributes port;
  if (!QueryPort(ca.get(), port_num, &port) || port.link_state != 4) {
    return Status::INVALID_PORT_STATE;
  }
  return Locked([&](Work& work) {
    if (cep->state != CepState::IDLE || closing_) return Status::INVALID_STATE;
    cep->ca = ca;
    cep->port = port_num;
    cep->service_id = service_id;
    cep->qp_type = abi::QpType::UD;
    cep->primary = target;
    cep->peer_cm = PeerCmOf(target);
    InsertLocked(cep);
    wire::ServiceIDResReq req;
    req.RequestID = cep->local_id;
    req.PartitionKey = record.P_Key;
    req.ServiceID = service_id;
    std::copy(private_data.begin(), private_data.end(), req.PrivateData.begin());
    cep->state = CepState::SIDR_REQ_SENT;
    SendLocked(cep, wire::ServiceIDResReq::kAttributeId, req.Pack(), work);
    ArmLocked(cep, CepTimer::SIDR, std::chrono::milliseconds(timeout_ms), max_retries);
    return Status::SUCCESS;
  });
}

void ConnectionManager::OnSidrReqLocked(GsiAgent& agent, std::span<const uint8_t> mad,
                                        const MadOrigin& origin, const abi::PortAttributes& port,
                                        Work& work) {
  wire::ServiceIDResReq req;
  if (!req.Unpack(CmMessage(mad))) return;
  std::shared_ptr<AlCa> ca = al_->FindCa(agent.ca()->guid);
  if (!ca) return;
  const uint16_t slid = static_cast<uint16_t>(origin.wc.slid);
  if (auto dup = sidr_by_remote_.find({req.RequestID, slid}); dup != sidr_by_remote_.end()) {
    return;  // a retry while the consumer decides
  }
  CepObj* listen = FindListenLocked(req.ServiceID, be64toh(port.port_guid), req.PrivateData);
  if (listen == nullptr) {
    rejected.fetch_add(1, std::memory_order_relaxed);
    wire::ServiceIDResReqResp rep;
    rep.RequestID = req.RequestID;
    rep.Status = static_cast<uint8_t>(wire::CmSidrStatus::SERVICE_ID_NOT_SUPPORTED);
    rep.ServiceID = req.ServiceID;
    work.sends.push_back({ca, agent.port(), ReturnAddress(origin),
                          CmMad(wire::ServiceIDResReqResp::kAttributeId, 0, rep.Pack())});
    return;
  }
  CepObj* cep = NewCepLocked(listen);
  if (cep == nullptr) return;
  cep->ca = ca;
  cep->port = agent.port();
  cep->service_id = req.ServiceID;
  cep->qp_type = abi::QpType::UD;
  cep->remote_id = req.RequestID;
  cep->sidr_slid = slid;
  cep->peer_cm = ReturnAddress(origin);
  InsertLocked(cep);
  sidr_by_remote_[{req.RequestID, slid}] = cep;
  cep->state = CepState::SIDR_REQ_RCVD;
  OfferCepLocked(listen, cep, abi::CepEventType::SIDR_REQ_RECEIVED, mad, work);
}

void ConnectionManager::SendSidrRepLocked(CepObj* cep, uint8_t status, uint32_t qpn, uint32_t qkey,
                                          std::span<const uint8_t> info,
                                          std::span<const uint8_t> private_data, Work& work) {
  wire::ServiceIDResReqResp rep;
  rep.RequestID = cep->remote_id;
  rep.Status = status;
  rep.AdditionalInfoLength = static_cast<uint8_t>(info.size());
  rep.QPN = qpn;
  rep.ServiceID = cep->service_id;
  rep.Q_Key = qkey;
  std::copy(info.begin(), info.end(), rep.ClassPortInfo.begin());
  std::copy(private_data.begin(), private_data.end(), rep.PrivateData.begin());
  SendLocked(cep, wire::ServiceIDResReqResp::kAttributeId, rep.Pack(), work, false);
}

Status ConnectionManager::SendSidrRep(CepObj* cep, QpObj* qp, uint8_t status, uint32_t qkey,
                                      std::span<const uint8_t> info,
                                      std::span<const uint8_t> private_data) {
  if (info.size() > abi::kCepInfoBytes) return Status::INVALID_PARAMETER;
  const bool valid = status == static_cast<uint8_t>(wire::CmSidrStatus::VALID);
  return Locked([&](Work& work) {
    if (cep->state != CepState::SIDR_REQ_RCVD) return Status::INVALID_STATE;
    // VALID names a UD QP; without one there is no service type to give.
    if (valid && (qp == nullptr || qp->type != abi::QpType::UD)) {
      return Status::INVALID_SERVICE_TYPE;
    }
    SendSidrRepLocked(cep, status, valid ? qp->qp_num : 0, valid ? qkey : 0, info, private_data,
                      work);
    RemoveLocked(cep, work);
    return Status::SUCCESS;
  });
}

void ConnectionManager::OnSidrRepLocked(std::span<const uint8_t> mad, Work& work) {
  wire::ServiceIDResReqResp rep;
  if (!rep.Unpack(CmMessage(mad))) return;
  CepObj* cep = FindLocalLocked(rep.RequestID);
  if (cep == nullptr || cep->state != CepState::SIDR_REQ_SENT) return;
  Event(cep, abi::CepEventType::SIDR_REP_RECEIVED, mad, work);
  RemoveLocked(cep, work);
}

}  // namespace softib::al::cm
