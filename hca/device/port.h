// One port of the HCA: its addresses (LID/LMC, GIDs), P_Key table, MTU, the link it is
// cabled to and the counters the PMA will report (IBA 16.1.3.5 PortCounters and the
// PortInfo violation counters).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hca/device/cable.h"
#include "hca/device/packet.h"
#include "softib/abi/types.h"

namespace softib::hca {

inline constexpr uint16_t kDefaultPkey = 0xFFFF;  // full member of the default partition
inline constexpr uint16_t kPermissiveLid = 0xFFFF;
inline constexpr uint16_t kMulticastLidBase = 0xC000;

uint32_t MtuBytes(abi::PathMtu mtu);

// Why the receive side dropped a packet that parsed well, or passed the link.
enum class RecvDrop : uint8_t {
  kWrongDlid,       // not addressed to this port's LID range
  kUnknownQp,       // BTH:DestQP names no QP of this HCA
  kQpState,         // the QP cannot receive in its state (RESET, INIT, ERROR)
  kWrongTransport,  // opcode of a transport the QP is not (e.g. RC opcode to a UD QP)
  kPkeyViolation,   // BTH:P_Key does not match
  kQkeyViolation,   // DETH:Q_Key does not match (UD)
  kNoReceiveWqe,    // UD: nothing posted to receive into
  kTooLong,         // UD: payload larger than the path MTU
  kWrongSource,     // RC: SLID is not the connected peer's LID
  kCount,
};

struct PortCounters {
  uint64_t xmit_packets = 0;
  uint64_t rcv_packets = 0;  // accepted by the link layer
  uint64_t pkey_violations = 0;
  uint64_t qkey_violations = 0;
  std::array<uint64_t, 12> parse_drops{};  // by DropReason
  std::array<uint64_t, static_cast<std::size_t>(RecvDrop::kCount)> recv_drops{};

  uint64_t parse_drop(DropReason r) const { return parse_drops[static_cast<std::size_t>(r)]; }
  uint64_t recv_drop(RecvDrop r) const { return recv_drops[static_cast<std::size_t>(r)]; }
};

struct Port {
  uint8_t number = 1;
  uint16_t lid = 0;
  uint8_t lmc = 0;
  uint8_t sm_sl = 0;
  abi::PathMtu active_mtu = abi::PathMtu::MTU_4096;
  uint64_t subnet_prefix = 0xFE80000000000000ull;  // link-local (IBA 4.1.1)
  uint64_t port_guid = 0;
  std::vector<uint16_t> pkeys{kDefaultPkey};
  Link* link = nullptr;
  PortCounters counters;

  // GID index 0: subnet prefix and port GUID, in network order.
  abi::Gid Gid(uint8_t index) const;
  // True when a packet with `dlid` is addressed to this port (LID range under the LMC).
  bool AcceptsDlid(uint16_t dlid) const;
  uint32_t mtu_bytes() const { return MtuBytes(active_mtu); }
};

// P_Key matching (IBA 10.9.3): the low 15 bits equal, and not both limited members
// (bit 15 clear). The invalid P_Key (low bits zero) matches nothing.
bool PkeysMatch(uint16_t a, uint16_t b);

}  // namespace softib::hca
