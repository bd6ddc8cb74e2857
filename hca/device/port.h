// One port of the HCA: its addresses (LID/LMC, GIDs), P_Key table, MTU, the link it is
// cabled to and the counters the PMA will report (IBA 16.1.3.5 PortCounters and the
// PortInfo violation counters).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "hca/device/cable.h"
#include "hca/device/counters.h"
#include "hca/device/packet.h"
#include "softib/abi/types.h"
#include "softib/smp/traps.h"

namespace softib::hca {

inline constexpr uint16_t kDefaultPkey = 0xFFFF;  // full member of the default partition
inline constexpr uint16_t kPermissiveLid = 0xFFFF;
inline constexpr uint16_t kMulticastLidBase = 0xC000;
// VLArbitrationHighCap / LowCap: entries of each VL arbitration table.
inline constexpr unsigned kVlArbEntries = 8;

uint32_t MtuBytes(abi::PathMtu mtu);

struct Port {
  uint8_t number = 1;
  uint16_t lid = 0;
  uint8_t lmc = 0;
  uint8_t sm_sl = 0;
  abi::PathMtu active_mtu = abi::PathMtu::MTU_4096;
  uint64_t subnet_prefix = 0xFE80000000000000ull;  // link-local (IBA 4.1.1)
  uint64_t port_guid = 0;
  // The P_Key table (host order); Hca sizes it to HcaConfig::pkey_table_size, index 0
  // the default partition, unused entries 0 (the invalid P_Key, IBA 10.9.1.2).
  std::vector<uint16_t> pkeys{kDefaultPkey};
  Link* link = nullptr;
  std::vector<uint8_t> spare_buffer;  // what the link handed back for the next packet
  PortCounters counters;
  // PortInfo as the SMA reports and sets it (IBA 14.2.5.6; sma_port_info.cc).
  uint16_t sm_lid = 0;
  uint8_t subnet_timeout = 18;  // 4.096 us * 2^18 ≈ 1 s
  uint8_t init_type_reply = 0;
  abi::PortCapabilities capabilities{};
  bool shut_down = false;  // ModifyCa SHUTDOWN_PORT or PortPhysicalState Disabled
  uint64_t mkey = 0;
  uint8_t mkey_protect_bits = 0;
  uint16_t mkey_lease_period = 0;  // seconds
  uint16_t mkey_violations = 0;
  std::optional<uint64_t> mkey_lease_start;  // seconds, while the lease period runs
  uint8_t link_width_enabled = 0;            // 0 until the HCA fills in its supported widths
  uint8_t link_speed_enabled = 0;
  uint8_t link_down_default = 2;  // Polling
  uint8_t operational_vls = 0;    // 0 until the HCA fills in its VLCap
  uint8_t vl_high_limit = 0;
  uint8_t local_phy_errors = 0;  // thresholds for the LocalLinkIntegrity trap
  uint8_t overrun_errors = 0;
  std::array<uint8_t, 8> sl_to_vl{};  // the SLtoVLMappingTable as packed on the wire
  // VLArbitrationTable (IBA 14.2.5.9): (VL, weight) entries, high and low priority.
  std::array<std::array<uint8_t, 2>, kVlArbEntries> vlarb_high{}, vlarb_low{};
  // GUIDInfo: alias GUIDs of GID indexes 1.. (index 0 is port_guid, read-only).
  std::vector<uint64_t> alias_guids;
  // The SMA's traps waiting for the SM's TrapRepress (sma_traps.cc). TIDs tagged "CA".
  smp::TrapQueue traps{0x4341};

  // The logical link state (IBA PortState). A port an SM never configured keeps the
  // behaviour of a preconfigured port: Down without a cable or when shut down, Init
  // without a LID, Active with one. Once an SM sets its PortInfo (sm_managed), the state
  // is the one the SM drove it to: the link brings it to Init, SubnSet to Armed, Active.
  bool sm_managed = false;
  uint8_t sm_state = 2;  // Init / Armed / Active while sm_managed and the link is up
  uint8_t LinkState() const {
    if (link == nullptr || shut_down) return 1;
    if (sm_managed) return sm_state;
    return lid == 0 ? 2 : 4;
  }
  // PortPhysicalState: Polling (2) without a cable, Disabled (3) when shut down, LinkUp (5).
  uint8_t PhysState() const { return shut_down ? 3 : link == nullptr ? 2 : 5; }
  bool Active() const { return LinkState() == 4; }

  // GID `index`: subnet prefix and port GUID (index 0) or the alias GUID set through
  // GUIDInfo, in network order; all zero for an unset index.
  abi::Gid Gid(uint8_t index) const;
  // True when a packet with `dlid` is addressed to this port (LID range under the LMC).
  bool AcceptsDlid(uint16_t dlid) const;
  uint32_t mtu_bytes() const { return MtuBytes(active_mtu); }
};

// P_Key matching (IBA 10.9.3): the low 15 bits equal, and not both limited members
// (bit 15 clear). The invalid P_Key (low bits zero) matches nothing.
bool PkeysMatch(uint16_t a, uint16_t b);

}  // namespace softib::hca
