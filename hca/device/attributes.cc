// What QueryCa, QueryGidTable and QueryPkeyTable report, and what ModifyCa changes. The
// figures come from HcaConfig (the limits the device enforces) and the ports' state.
#include <endian.h>

#include "hca/device/hca.h"

namespace softib::hca {

using abi::CaCapabilities;
using abi::PortCapabilities;

abi::CaAttributes Hca::QueryCa() const {
  const HcaConfig& c = config_;
  abi::CaAttributes a{};
  a.ca_guid = htobe64(c.node_guid);
  a.system_image_guid = htobe64(c.system_image_guid != 0 ? c.system_image_guid : c.node_guid);
  a.fw_version = c.fw_version;
  a.max_mr_size = ~uint64_t{0};
  a.page_size_cap = 0xFFFFF000;  // 4 KiB pages and every larger power of two up to 2 GiB
  a.vendor_id = c.vendor_id;
  a.device_id = c.device_id;
  a.revision = c.hw_revision;
  a.max_qps = c.max_qps;
  a.max_wrs = c.max_wrs;
  a.max_sges = c.max_sges;
  a.max_rd_sges = c.max_sges;
  a.max_cqs = c.max_cqs;
  a.max_cqes = c.max_cqes;
  a.max_pds = c.max_pds;
  a.max_mrs = c.max_mrs;
  a.max_mws = c.max_mws;
  a.max_avs = c.max_ahs;
  a.max_partitions = c.pkey_table_size;
  a.max_qp_resp_res = c.max_qp_resp_res;
  a.max_resp_res = c.max_qp_resp_res * c.max_qps;
  a.max_qp_init_depth = c.max_qp_init_depth;
  a.max_ipv6_qps = 0;  // raw QPs are not offered
  a.max_ether_qps = 0;
  a.max_mcast_grps = c.max_mcast_grps;
  a.max_mcast_qps = c.max_mcast_qp_attach;
  a.max_qps_per_mcast_grp = c.max_qps_per_mcast_grp;
  a.max_fmr = 0;
  a.max_map_per_fmr = 0;
  a.max_srqs = c.max_srqs;
  a.max_srq_wrs = c.max_srq_wrs;
  a.max_srq_sges = c.max_srq_sges;
  a.max_inline_data = c.max_inline;
  // Atomics are atomic among this HCA's own accesses only; CPU accesses are not locked out.
  a.atomicity = abi::AtomicCap::LOCAL;
  a.capabilities = CaCapabilities::BAD_PKEY_COUNTER | CaCapabilities::BAD_QKEY_COUNTER |
                   CaCapabilities::AV_PORT_CHECK | CaCapabilities::MODIFY_SRQ_DEPTH |
                   CaCapabilities::SRQ_RESIZE | CaCapabilities::CURRENT_QP_STATE |
                   CaCapabilities::SHUTDOWN_PORT | CaCapabilities::INIT_TYPE |
                   CaCapabilities::PORT_ACTIVE_EVENT | CaCapabilities::SYSTEM_IMAGE_GUID |
                   CaCapabilities::RC_RNR_NAK_GEN | CaCapabilities::MW_TYPE2;
  a.local_ack_delay = c.local_ack_delay;
  a.num_ports = c.num_ports;
  return a;
}

abi::Status Hca::QueryPort(uint8_t port_number, abi::PortAttributes* out) const {
  if (port_number < 1 || port_number > config_.num_ports) return abi::Status::INVALID_PORT;
  const Port& p = port(port_number);
  abi::PortAttributes a{};
  a.port_guid = htobe64(p.port_guid);
  a.subnet_prefix = htobe64(p.subnet_prefix);
  a.capabilities = p.capabilities;
  a.max_msg_size = static_cast<uint32_t>(kMaxMessageBytes);
  a.lid = p.lid;
  a.sm_lid = p.sm_lid;
  a.num_gids = config_.gid_table_size;
  a.num_pkeys = static_cast<uint16_t>(p.pkeys.size());
  // PortInfo's violation counters are 16 bits and stop at their maximum (IBA 14.2.5.6).
  a.pkey_violations = static_cast<uint16_t>(std::min<uint64_t>(p.counters.pkey_violations, 0xFFFF));
  a.qkey_violations = static_cast<uint16_t>(std::min<uint64_t>(p.counters.qkey_violations, 0xFFFF));
  a.port_num = port_number;
  a.lmc = p.lmc;
  a.max_vls = config_.max_vls;
  a.sm_sl = p.sm_sl;
  a.link_state = p.LinkState();
  a.phys_state = p.PhysState();
  a.active_mtu = p.active_mtu;
  a.max_mtu = config_.max_mtu;
  a.active_speed = config_.active_speed;
  a.active_width = config_.active_width;
  a.subnet_timeout = p.subnet_timeout;
  a.init_type_reply = p.init_type_reply;
  *out = a;
  return abi::Status::SUCCESS;
}

abi::Status Hca::QueryGidTable(uint8_t port_number, uint32_t start, std::span<abi::Gid> out,
                               uint32_t* count) const {
  *count = 0;
  if (port_number < 1 || port_number > config_.num_ports) return abi::Status::INVALID_PORT;
  if (start >= config_.gid_table_size) return abi::Status::INVALID_INDEX;
  const Port& p = port(port_number);
  const uint32_t n =
      std::min<uint32_t>(static_cast<uint32_t>(out.size()), config_.gid_table_size - start);
  // Index 0 is the port's default GID (subnet prefix + port GUID); the rest are unset.
  for (uint32_t i = 0; i < n; ++i) out[i] = p.Gid(static_cast<uint8_t>(start + i));
  *count = n;
  return abi::Status::SUCCESS;
}

abi::Status Hca::QueryPkeyTable(uint8_t port_number, uint32_t start, std::span<uint16_t> out,
                                uint32_t* count) const {
  *count = 0;
  if (port_number < 1 || port_number > config_.num_ports) return abi::Status::INVALID_PORT;
  const Port& p = port(port_number);
  if (start >= p.pkeys.size()) return abi::Status::INVALID_INDEX;
  const uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(out.size()),
                                        static_cast<uint32_t>(p.pkeys.size()) - start);
  for (uint32_t i = 0; i < n; ++i) out[i] = htobe16(p.pkeys[start + i]);
  *count = n;
  return abi::Status::SUCCESS;
}

abi::Status Hca::ModifyCa(uint8_t port_number, abi::ModifyCaFlags flags, PortCapabilities cap_set,
                          PortCapabilities cap_clear, uint8_t init_type,
                          uint64_t system_image_guid) {
  using F = abi::ModifyCaFlags;
  if ((static_cast<uint32_t>(flags) & ~abi::kModifyCaFlagsValidMask) != 0 ||
      (static_cast<uint32_t>(cap_set | cap_clear) & ~abi::kPortCapabilitiesValidMask) != 0)
    return abi::Status::INVALID_SETTING;
  const bool port_flags =
      abi::HasAny(flags, F::RESET_QKEY_COUNTER | F::RESET_PKEY_COUNTER | F::SHUTDOWN_PORT |
                             F::INIT_TYPE | F::PORT_CAPABILITIES);
  if (port_flags && (port_number < 1 || port_number > config_.num_ports))
    return abi::Status::INVALID_PORT;
  if (abi::HasAny(flags, F::INIT_TYPE) && init_type > 0xF) return abi::Status::INVALID_SETTING;
  // Every check passed: apply.
  if (abi::HasAny(flags, F::SYSTEM_IMAGE_GUID))
    config_.system_image_guid = be64toh(system_image_guid);
  if (!port_flags) return abi::Status::SUCCESS;
  Port& p = port(port_number);
  if (abi::HasAny(flags, F::RESET_QKEY_COUNTER)) p.counters.qkey_violations = 0;
  if (abi::HasAny(flags, F::RESET_PKEY_COUNTER)) p.counters.pkey_violations = 0;
  if (abi::HasAny(flags, F::SHUTDOWN_PORT)) {
    const uint8_t before = p.LinkState();
    p.shut_down = true;
    p.sm_state = 2;  // if it ever comes back, in Init
    ReportPortChange(p, before);
  }
  if (abi::HasAny(flags, F::INIT_TYPE)) p.init_type_reply = init_type;
  if (abi::HasAny(flags, F::PORT_CAPABILITIES)) {
    // IsSM is set by an SM running above the port (the AL's issm: softib-sm --run-dir).
    const PortCapabilities before = p.capabilities;
    p.capabilities = (p.capabilities | cap_set) & ~cap_clear;
    if (p.capabilities != before) {
      mad::Trap144Details d;
      d.LIDADDR = p.lid;
      d.CAPABILITYMASK = static_cast<uint32_t>(p.capabilities);
      RaiseTrap(p, smp::kNoticeInformational, smp::kTrapCapabilityMaskChange, d.Pack());
    }
  }
  return abi::Status::SUCCESS;
}

// ---- port state ---------------------------------------------------------------------------

void Hca::SetPortLink(uint8_t port_number, Link* link) {
  Port& p = port(port_number);
  const uint8_t before = p.LinkState();
  p.link = link;
  // A link that went down (or was replaced) comes up in Init: an SM-managed port waits
  // for the SM to activate it again (IBA 7.2.1).
  if (link == nullptr || before == 1) p.sm_state = 2;
  ReportPortChange(p, before);
}

void Hca::ReportPortChange(const Port& p, uint8_t before) {
  // The unaffiliated events of IBA 11.6.3.3: a port entering ACTIVE, or leaving it (the
  // link went down). INIT/ARMED steps without an SM are not reported.
  constexpr uint8_t kActive = 4;
  const uint8_t after = p.LinkState();
  if (before == after || (before != kActive && after != kActive)) return;
  if (!async_events) return;
  async_events(DeviceEvent{
      after == kActive ? abi::AsyncEventType::PORT_ACTIVE : abi::AsyncEventType::PORT_DOWN,
      p.number});
}

}  // namespace softib::hca
