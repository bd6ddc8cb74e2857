// Per-port counters, as the Performance Management Agent will report them (IBA 16.1.3.5
// PortCounters, 16.1.4 PortCountersExtended) plus the PortInfo violation counters
// (P_Key/Q_Key). Kept as 64-bit totals; the PMA saturates them to the attribute's width.
// Data counters are in 4-byte words: the octets from the LRH through the ICRC, VCRC
// excluded (IBA 16.1.3.5 PortXmitData / PortRcvData), i.e. LRH:PktLen per packet.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "hca/device/packet.h"

namespace softib::hca {

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
  kWrongVl,         // QP0 traffic off VL15, or VL15 traffic to another QP (IBA 7.6.1)
  kNoGrh,           // multicast without a GRH, or with a DGID no attached group has
  kNoMcastGroup,    // multicast LID with no attached QP on this port
  kPortNotActive,   // a data packet (not VL15) on a port in Init or Armed
  kCount,
};

struct PortCounters {
  uint64_t xmit_packets = 0;     // PortXmitPkts
  uint64_t rcv_packets = 0;      // PortRcvPkts: accepted by the link layer
  uint64_t xmit_data_words = 0;  // PortXmitData
  uint64_t rcv_data_words = 0;   // PortRcvData (packets accepted by the link layer)
  uint64_t xmit_unicast_packets = 0, xmit_multicast_packets = 0;  // PortCountersExtended
  uint64_t rcv_unicast_packets = 0, rcv_multicast_packets = 0;
  uint64_t rcv_errors = 0;     // PortRcvErrors: malformed packets (CRC, length, version...)
  uint64_t xmit_discards = 0;  // PortXmitDiscards: no link, or the port is down
  uint64_t vl15_dropped = 0;   // VL15Dropped: SMPs QP0 could not take (none posted, bad VL)
  uint64_t qp1_dropped = 0;    // QP1Dropped: GMPs QP1 could not take (no receive posted)
  uint64_t local_link_integrity_errors = 0;  // LocalLinkIntegrityErrors (no PHY: stays 0)
  uint64_t symbol_errors = 0;                // SymbolErrorCounter (no PHY: stays 0)
  uint64_t pkey_violations = 0;              // PortInfo:P_KeyViolations
  uint64_t qkey_violations = 0;              // PortInfo:Q_KeyViolations
  std::array<uint64_t, 12> parse_drops{};    // by DropReason
  std::array<uint64_t, static_cast<std::size_t>(RecvDrop::kCount)> recv_drops{};

  uint64_t parse_drop(DropReason r) const { return parse_drops[static_cast<std::size_t>(r)]; }
  uint64_t recv_drop(RecvDrop r) const { return recv_drops[static_cast<std::size_t>(r)]; }
};

}  // namespace softib::hca
