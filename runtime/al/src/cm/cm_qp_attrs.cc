// The ModifyQp attributes a connection's QP needs (IBA 12.9, as Linux's
// ib_cm_init_qp_attr): RTR from the REQ on at the passive side (the REQ names the peer's QPN
// and PSN, the path and the responder resources: the QP is in RTR before its REP leaves, so
// the first SEND after the peer's RTU cannot find it in INIT) and once the REP is received at
// the active side; RTS after (our PSN, ACK timeout and retries, initiator
// depth; with an alternate path, path migration REARM), or after LAP/APR the RTS -> RTS
// load of the new alternate path. QP transitions stay with the client.
#include "runtime/al/src/cm/cm.h"

namespace softib::al::cm {

using kernel::Status;
using M = abi::QpAttrMask;

namespace {

bool PastRep(CepState state) {
  switch (state) {
    case CepState::REP_SENT:
    case CepState::MRA_REP_RCVD:
    case CepState::REP_RCVD:
    case CepState::MRA_REP_SENT:
    case CepState::ESTABLISHED:
      return true;
    default:
      return false;
  }
}

// The alternate path's attributes (ALT_PATH) and the migration state that arms it.
void AlternateAttributes(const CepObj& cep, abi::QpModifyAttributes* a) {
  a->alt_av = cep.alternate.av;
  a->alt_port_num = cep.alternate.av.port_num;
  a->alt_pkey_index = cep.alternate.pkey_index;
  a->alt_timeout = cep.alternate.local_ack_timeout;
  a->path_mig_state = abi::ApmState::REARM;
}

}  // namespace

Status ConnectionManager::RtrAttributes(CepObj* cep, abi::QpModifyAttributes* out) {
  kernel::SpinLockGuard guard(lock_);
  const bool req_received =
      cep->state == CepState::REQ_RCVD || cep->state == CepState::MRA_REQ_SENT;
  if (!req_received && !PastRep(cep->state)) return Status::INVALID_STATE;
  abi::QpModifyAttributes a{};
  a.mask = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN;
  a.state = abi::QpState::RTR;
  a.av = cep->primary.av;
  a.path_mtu = cep->primary.mtu;
  a.dest_qpn = cep->remote_qpn;
  a.rq_psn = cep->rq_psn;
  if (cep->qp_type == abi::QpType::RC) {
    a.mask = a.mask | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER;
    a.max_dest_rd_atomic = cep->responder_resources;
    a.min_rnr_timer = 0;  // Linux's default: 655.36 ms
  }
  if (cep->has_alternate) {
    a.mask = a.mask | M::ALT_PATH;
    AlternateAttributes(*cep, &a);  // armed by the RTS attributes
  }
  *out = a;
  return Status::SUCCESS;
}

Status ConnectionManager::RtsAttributes(CepObj* cep, abi::QpModifyAttributes* out) {
  kernel::SpinLockGuard guard(lock_);
  if (!PastRep(cep->state)) return Status::INVALID_STATE;
  abi::QpModifyAttributes a{};
  a.state = abi::QpState::RTS;
  if (cep->lap_loaded && cep->state == CepState::ESTABLISHED) {
    // After LAP/APR the QP is in RTS already: RTS -> RTS loading the new alternate path.
    a.mask = M::STATE | M::ALT_PATH | M::PATH_MIG_STATE;
    AlternateAttributes(*cep, &a);
    *out = a;
    return Status::SUCCESS;
  }
  a.mask = M::STATE | M::SQ_PSN;
  a.sq_psn = cep->sq_psn;
  if (cep->qp_type == abi::QpType::RC) {
    a.mask = a.mask | M::TIMEOUT | M::RETRY_COUNT | M::RNR_RETRY | M::MAX_RD_ATOMIC;
    a.timeout = cep->primary.local_ack_timeout;
    a.retry_count = cep->retry_count;
    a.rnr_retry = cep->rnr_retry_count;
    a.max_rd_atomic = cep->initiator_depth;
  }
  if (cep->has_alternate) {  // loaded at RTR: armed now
    a.mask = a.mask | M::PATH_MIG_STATE;
    a.path_mig_state = abi::ApmState::REARM;
  }
  *out = a;
  return Status::SUCCESS;
}

}  // namespace softib::al::cm
