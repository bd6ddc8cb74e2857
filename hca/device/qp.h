// A queue pair: its type, state, attributes and work queues. State changes go through the
// IDL's modify-QP table (CheckQpTransition, generated from idl/qp_state.idl); this file
// only adds the value checks the table cannot express (port and P_Key index in range,
// MTU a known value) and applies the attributes.
#pragma once

#include <cstdint>
#include <deque>

#include "hca/device/pd.h"
#include "hca/device/rc.h"
#include "softib/abi/types.h"

namespace softib::hca {

// What ModifyQp needs to know about the HCA to range-check attribute values.
struct QpLimits {
  uint8_t num_ports = 1;
  uint16_t num_pkeys = 1;      // of the QP's port
  uint16_t alt_num_pkeys = 1;  // of the alternate path's port (ALT_PATH)
  abi::PathMtu max_mtu = abi::PathMtu::MTU_4096;
};

inline constexpr uint32_t kPsnMask = 0xFFFFFF;

struct QueuePair {
  uint32_t qpn = 0;     // on the wire and in completions
  uint32_t handle = 0;  // what the Hca's methods take: qpn, or a special QP's handle
  uint32_t srq = 0;     // 0: receives come from `rq`
  bool last_wqe_reported = false;
  abi::QpType type = abi::QpType::UD;
  PdId pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  bool sq_signaled = true;
  abi::QpCaps caps{};

  abi::QpState state = abi::QpState::RESET;
  abi::AccessFlags access{};
  uint32_t qkey = 0;  // host order (the verbs carry it in network order)
  uint32_t sq_psn = 0;
  uint32_t rq_psn = 0;
  uint32_t dest_qpn = 0;
  uint16_t pkey_index = 0;
  uint8_t port = 1;
  abi::PathMtu path_mtu{};
  uint8_t timeout = 0, retry_count = 0, rnr_retry = 0, min_rnr_timer = 0;
  uint8_t max_rd_atomic = 0, max_dest_rd_atomic = 0;
  abi::AddressVector av{};
  // Automatic path migration (IBA 17.2.8): the alternate path and the migration state.
  // ARMED: the requester moves to the alternate path when its retries on the primary run
  // out, the responder when a packet with BTH:MigReq arrives on the alternate path; either
  // way the paths swap, the state becomes MIGRATED and QP_PATH_MIGRATED is reported.
  // MIGRATED sends MigReq = 1 (the peer learns of the migration), ARMED/REARM MigReq = 0.
  bool has_alt = false;
  abi::AddressVector alt_av{};
  uint8_t alt_port = 0;
  uint16_t alt_pkey_index = 0;
  uint8_t alt_timeout = 0;
  abi::ApmState mig_state = abi::ApmState::MIGRATED;
  // SQD (IBA 10.3.1, 11.6.3.1): with EN_SQD_ASYNC_NOTIFY, the drain that RTS→SQD starts
  // ends with one SQ_DRAINED event once no started send request is outstanding.
  bool en_sqd_async_notify = false;
  bool sqd_notify_pending = false;

  std::deque<abi::SendWorkRequest> sq;
  std::deque<abi::RecvWorkRequest> rq;
  RcState rc;  // RC only: the send queue lives in rc.req.wqes instead of `sq`

  // Checks the transition and the attribute values, then applies them; on any error the
  // QP is unchanged. Leaving the queues alone is the caller's job (reset empties them,
  // error flushes them: the caller owns the CQs).
  abi::Status Modify(const abi::QpModifyAttributes& attrs, const QpLimits& limits);
  abi::QpAttributes Query() const;
  // The alternate path becomes the primary (and the old primary the alternate); MIGRATED.
  void Migrate();
  bool Armed() const { return has_alt && mig_state == abi::ApmState::ARMED; }

  bool CanReceive() const {
    return state == abi::QpState::RTR || state == abi::QpState::RTS || state == abi::QpState::SQD ||
           state == abi::QpState::SQE;
  }
  // In SQD with started send requests not yet completed (RC/UC; a UD send is complete
  // when it is sent).
  bool SqDraining() const { return state == abi::QpState::SQD && rc.req.next != 0; }
  bool IsDatagram() const {
    return type == abi::QpType::UD || type == abi::QpType::GSI || type == abi::QpType::SMI;
  }
};

}  // namespace softib::hca
