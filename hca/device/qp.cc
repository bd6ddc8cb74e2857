#include "hca/device/qp.h"

#include <endian.h>

#include <utility>

#include "softib/abi/qp_state_table.h"

namespace softib::hca {

using abi::QpAttrMask;

abi::Status QueuePair::Modify(const abi::QpModifyAttributes& attrs, const QpLimits& limits) {
  const QpAttrMask mask = attrs.mask;
  const auto has = [&](QpAttrMask bit) { return abi::HasAny(mask, bit); };
  // Without STATE the table rejects the call (every transition requires it); ask it about
  // "stay in the current state" so the answer is the missing-attribute one.
  const abi::QpState to = has(QpAttrMask::STATE) ? attrs.state : state;
  if (has(QpAttrMask::CUR_STATE) && attrs.current_state != state) return abi::Status::INVALID_STATE;
  const abi::Status verdict = abi::CheckQpTransition(type, state, to, static_cast<uint32_t>(mask));
  if (verdict != abi::Status::SUCCESS) return verdict;

  const uint8_t new_port = has(QpAttrMask::PORT) ? attrs.port_num : port;
  if (new_port < 1 || new_port > limits.num_ports) return abi::Status::INVALID_PORT;
  if (has(QpAttrMask::PKEY_INDEX) && attrs.pkey_index >= limits.num_pkeys)
    return abi::Status::INVALID_PKEY;
  if (has(QpAttrMask::PATH_MTU) && (attrs.path_mtu < static_cast<uint8_t>(abi::PathMtu::MTU_256) ||
                                    attrs.path_mtu > static_cast<uint8_t>(limits.max_mtu)))
    return abi::Status::INVALID_SETTING;
  if (has(QpAttrMask::ACCESS_FLAGS) &&
      (static_cast<uint32_t>(attrs.access_flags) & ~abi::kAccessFlagsValidMask) != 0)
    return abi::Status::INVALID_PARAMETER;
  if (has(QpAttrMask::AV) && (attrs.av.port_num < 1 || attrs.av.port_num > limits.num_ports))
    return abi::Status::INVALID_PORT;
  if (has(QpAttrMask::ALT_PATH)) {
    if (attrs.alt_port_num < 1 || attrs.alt_port_num > limits.num_ports)
      return abi::Status::INVALID_PORT;
    if (attrs.alt_pkey_index >= limits.alt_num_pkeys) return abi::Status::INVALID_PKEY;
  }
  const bool will_have_alt = has_alt || has(QpAttrMask::ALT_PATH);
  if (has(QpAttrMask::PATH_MIG_STATE)) {
    const auto mig = attrs.path_mig_state;
    if (mig != abi::ApmState::MIGRATED && mig != abi::ApmState::REARM &&
        mig != abi::ApmState::ARMED)
      return abi::Status::INVALID_SETTING;
    // Arming needs an alternate path to migrate to.
    if (mig != abi::ApmState::MIGRATED && !will_have_alt) return abi::Status::INVALID_SETTING;
  }

  if (has(QpAttrMask::ACCESS_FLAGS)) access = attrs.access_flags;
  if (has(QpAttrMask::PKEY_INDEX)) pkey_index = attrs.pkey_index;
  port = new_port;
  if (has(QpAttrMask::QKEY)) qkey = be32toh(attrs.qkey);
  if (has(QpAttrMask::AV)) av = attrs.av;
  if (has(QpAttrMask::PATH_MTU)) path_mtu = static_cast<abi::PathMtu>(attrs.path_mtu);
  if (has(QpAttrMask::TIMEOUT)) timeout = attrs.timeout;
  if (has(QpAttrMask::RETRY_COUNT)) retry_count = attrs.retry_count;
  if (has(QpAttrMask::RNR_RETRY)) rnr_retry = attrs.rnr_retry;
  if (has(QpAttrMask::RQ_PSN)) rq_psn = attrs.rq_psn & kPsnMask;
  if (has(QpAttrMask::SQ_PSN)) sq_psn = attrs.sq_psn & kPsnMask;
  if (has(QpAttrMask::MAX_RD_ATOMIC)) max_rd_atomic = attrs.max_rd_atomic;
  if (has(QpAttrMask::MAX_DEST_RD_ATOMIC)) max_dest_rd_atomic = attrs.max_dest_rd_atomic;
  if (has(QpAttrMask::MIN_RNR_TIMER)) min_rnr_timer = attrs.min_rnr_timer;
  if (has(QpAttrMask::DEST_QPN)) dest_qpn = attrs.dest_qpn & kPsnMask;  // 24 bits, as a PSN
  if (has(QpAttrMask::CAP)) caps = attrs.caps;
  if (has(QpAttrMask::EN_SQD_ASYNC_NOTIFY)) en_sqd_async_notify = attrs.en_sqd_async_notify != 0;
  if (has(QpAttrMask::ALT_PATH)) {
    has_alt = true;
    alt_av = attrs.alt_av;
    alt_av.port_num = attrs.alt_port_num;
    alt_port = attrs.alt_port_num;
    alt_pkey_index = attrs.alt_pkey_index;
    alt_timeout = attrs.alt_timeout;
  }
  if (has(QpAttrMask::PATH_MIG_STATE)) {
    // REARM arms at once: the device has nothing to synchronize with before it may migrate.
    // MIGRATED asked of an ARMED QP is a migration by the consumer (IBA 11.2.5.3 note).
    if (attrs.path_mig_state == abi::ApmState::MIGRATED) {
      if (Armed()) Migrate();
      mig_state = abi::ApmState::MIGRATED;
    } else {
      mig_state = abi::ApmState::ARMED;
    }
  }
  state = to;
  return abi::Status::SUCCESS;
}

abi::QpAttributes QueuePair::Query() const {
  abi::QpAttributes out{};
  out.qp_type = type;
  out.state = state;
  out.access_flags = access;
  out.qp_num = qpn;
  out.dest_qpn = dest_qpn;
  out.qkey = htobe32(qkey);
  out.sq_psn = sq_psn;
  out.rq_psn = rq_psn;
  out.caps = caps;
  out.pkey_index = pkey_index;
  out.port_num = port;
  out.path_mtu = static_cast<uint8_t>(path_mtu);
  out.timeout = timeout;
  out.retry_count = retry_count;
  out.rnr_retry = rnr_retry;
  out.min_rnr_timer = min_rnr_timer;
  out.max_rd_atomic = max_rd_atomic;
  out.max_dest_rd_atomic = max_dest_rd_atomic;
  out.sq_signaled = sq_signaled;
  out.sq_draining = SqDraining();
  out.en_sqd_async_notify = en_sqd_async_notify;
  out.av = av;
  out.alt_av = alt_av;
  out.alt_port_num = alt_port;
  out.alt_pkey_index = alt_pkey_index;
  out.alt_timeout = alt_timeout;
  out.path_mig_state = mig_state;
  return out;
}

void QueuePair::Migrate() {
  std::swap(av, alt_av);
  std::swap(port, alt_port);
  std::swap(pkey_index, alt_pkey_index);
  std::swap(timeout, alt_timeout);
  av.port_num = port;
  alt_av.port_num = alt_port;
  mig_state = abi::ApmState::MIGRATED;
}

}  // namespace softib::hca
