// A simulated InfiniBand switch: N external ports plus the enhanced management port 0, its
// Subnet Management Agent (SubnGet/SubnSet of the switch attributes, LID-routed and
// directed-route, with M_Key protection), and its relay (LFT for unicast LIDs, MFT for
// multicast LIDs, directed-route SMPs by the IBA 14.2.2 rules of runtime/smp).
//
// A pure object: no threads, no sockets, no clock of its own. The code that hosts it
// (links, softibd) hands it packets with Receive() and transmits what comes back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "softib/mad/mad_sm.h"
#include "softib/smp/directed_route.h"
#include "softib/smp/traps.h"

namespace softib::fabric {

struct SwitchConfig {
  uint64_t node_guid = 0;
  uint64_t system_image_guid = 0;  // 0: the node GUID
  uint8_t num_ports = 8;           // external ports 1..num_ports (at most 254)
  std::string description;         // NodeDescription, at most 64 bytes
  uint32_t vendor_id = 0;          // 24 bits
  uint16_t device_id = 0;
  uint32_t revision = 0;
  uint16_t linear_fdb_cap = 0xC000;         // LIDs the LFT holds (a multiple of 64)
  uint16_t multicast_fdb_cap = 1024;        // MLIDs the MFT holds from 0xC000 (a multiple of 32)
  uint16_t partition_cap = 32;              // P_Keys of port 0
  uint16_t partition_enforcement_cap = 32;  // P_Keys of each external port
  uint8_t life_time_value = 18;
  // Every port's link capabilities (IBA 14.2.5.6 encodings).
  uint8_t link_width_supported = 0x03;  // 1X | 4X
  uint8_t link_width_active = 0x02;     // 4X
  uint8_t link_speed_supported = 0x07;  // SDR | DDR | QDR
  uint8_t link_speed_active = 0x04;     // QDR
  uint8_t mtu_cap = 5;                  // 4096
  uint8_t vl_cap = 4;                   // VL0-7
  uint8_t vl_arbitration_cap = 8;       // entries of the high and of the low table
};

// Why the switch did not pass a packet on.
enum class SwitchDrop : uint8_t {
  kMalformed,         // too short, LRH:PktLen or LVer wrong, bad ingress port
  kBadCrc,            // ICRC/VCRC of a packet for the management port
  kReservedLid,       // DLID 0, or the permissive LID on a data packet
  kUnprogrammedLid,   // no LFT/MFT entry (LID above LinearFDBTop, 0xFF entry, empty mask)
  kIngressNotActive,  // data packet from a port that is not Active
  kEgressNotActive,   // the chosen port cannot transmit it (Down, or not Active for data)
  kVl15NotSmp,        // VL15 packet that is not a QP0 UD SMP, or an SMP off VL15
  kDirectedRoute,     // the IBA 14.2.2 rules dropped it (see last_smp_drop())
  kNoAgent,           // data/GMP packet for the management port (no GSI agent here)
  kNoSm,              // a response or trap for an SM: this switch hosts none
  kMKeyViolation,     // SMP refused by the M_Key check (no response)
  kSmaIgnored,        // SMP the SMA does not answer (BaseVersion, unknown class)
  kPartition,         // P_Key not in the table of a port enforcing partitions
  kCount
};
const char* ToString(SwitchDrop drop);

// What route() decided for one packet.
struct RouteResult {
  // Ports to transmit on; 0 is the management port (this switch's SMA).
  std::vector<uint8_t> egress;
  // The bytes to transmit when the switch had to rewrite the packet (a directed-route
  // SMP's hop pointer/return path, LRH LIDs of a LID-routed segment) with the ICRC and
  // VCRC rebuilt; empty when the received bytes go on unchanged. For the management port
  // alone (a directed-route SMP that ends here) the CRCs are not rebuilt: the bytes go no
  // further than this switch's SMA, whose answer gets its own.
  std::vector<uint8_t> rewritten;
  std::optional<SwitchDrop> drop;
};

struct Transmit {
  uint8_t port = 0;
  std::vector<uint8_t> bytes;
  // The switch built these bytes' CRCs itself (a rewritten or answered SMP, a trap), or
  // passed on unchanged a packet that arrived `intact`: see Receive.
  bool intact = false;
};

// Per-port counters (the PortCounters a PMA would report).
struct SwitchPortCounters {
  uint64_t rcv_packets = 0;
  uint64_t xmit_packets = 0;
  uint64_t rcv_errors = 0;               // malformed or bad CRC
  uint64_t rcv_switch_relay_errors = 0;  // no forwarding entry for the DLID
  uint64_t xmit_discards = 0;            // the egress port could not take it
};

class Switch {
 public:
  explicit Switch(SwitchConfig config);

  // The relay's decision for `packet` (LRH through VCRC) arriving on `ingress` (0 = from
  // the management port). Counts drops; never throws. `intact`: see Receive.
  RouteResult route(uint8_t ingress, std::span<const uint8_t> packet, bool intact = false);

  // route(), then the management port: SMPs for this switch are answered and the responses
  // routed. Returns everything to transmit, each on its port.
  // `intact` says the bytes are exactly what a switch built (a Transmit marked intact) and
  // nothing changed them on the way (an in-memory cable without a corruption fault, no
  // tunnel): their CRCs were computed over these very bytes, so checking them again before
  // a directed-route SMP is rewritten would compute the same values. Anything else (a CA's
  // packet, a tunnel's, one a fault may have touched) is checked.
  std::vector<Transmit> Receive(uint8_t ingress, std::span<const uint8_t> packet,
                                bool intact = false);
  // The same, appended to `out` (a caller's vector, reused from packet to packet).
  void Receive(uint8_t ingress, std::span<const uint8_t> packet, bool intact,
               std::vector<Transmit>* out);
  // The same for a caller that owns the packet's buffer: a packet relayed unchanged to one
  // port (every unicast data packet) leaves in that buffer, moved into its Transmit — no
  // copy and no allocation per hop. `packet` is left empty then, else as it was.
  void ReceiveOwned(uint8_t ingress, std::vector<uint8_t>& packet, bool intact,
                    std::vector<Transmit>* out);

  // The SMA on its own: one SMP (256 bytes) arriving on `in_port`, already past the
  // directed-route rules. Returns the response MAD, or nothing when none is due.
  std::optional<std::array<uint8_t, 256>> HandleSmp(std::span<const uint8_t> mad, uint8_t in_port);

  // The physical link of an external port came up (logical state Init) or went down.
  void SetLinkUp(uint8_t port, bool up);
  // Traps due at `now_ns` (the host's clock), routed from the management port: Trap 128
  // once a link event set PortStateChange, 256 when an SMP failed the M_Key check, 259
  // when partition enforcement dropped a packet; each repeated every subnet timeout until
  // repressed, one per trap number outstanding.
  std::vector<Transmit> PollTraps(uint64_t now_ns);
  // When PollTraps has something to send (UINT64_MAX: nothing outstanding).
  uint64_t next_trap_ns() const;
  uint64_t traps_sent() const { return traps_.sent(); }
  bool trap_outstanding() const { return !traps_.empty(); }
  bool trap_outstanding(uint16_t trap_number) const { return traps_.outstanding(trap_number); }
  // Seconds on the host's clock, for the M_Key lease period.
  void SetTimeSeconds(uint64_t now) { now_seconds_ = now; }

  const SwitchConfig& config() const { return config_; }
  uint8_t num_ports() const { return config_.num_ports; }
  smp::NodeShape shape() const { return {true, config_.num_ports}; }
  const mad::PortInfo& port_info(uint8_t port) const { return ports_.at(port).info; }
  const mad::SwitchInfo& switch_info() const { return switch_info_; }
  uint16_t lid() const { return ports_[0].info.LID; }
  uint8_t lft_entry(uint16_t lid) const { return lid < lft_.size() ? lft_[lid] : 0xFF; }
  const SwitchPortCounters& counters(uint8_t port) const { return counters_.at(port); }
  uint64_t drops(SwitchDrop why) const { return drops_[static_cast<std::size_t>(why)]; }
  uint64_t total_drops() const;
  smp::Drop last_smp_drop() const { return last_smp_drop_; }

 private:
  struct VlArbEntry {
    uint8_t vl = 0;
    uint8_t weight = 0;
  };
  struct Port {
    mad::PortInfo info;
    bool cable_up = false;  // the physical link (external ports)
    std::vector<uint16_t> pkeys;
    std::array<VlArbEntry, 64> vlarb_high{};
    std::array<VlArbEntry, 64> vlarb_low{};
  };
  using Mad = std::array<uint8_t, 256>;

  // sma.cc
  bool MKeyAllows(uint8_t method, uint64_t mkey, bool* hide_mkey);
  uint16_t Dispatch(uint8_t method, uint16_t attribute, uint32_t modifier, uint8_t in_port,
                    bool hide_mkey, std::span<uint8_t, 64> data);
  uint16_t NodeInfoGet(uint32_t modifier, uint8_t in_port, std::span<uint8_t, 64> data) const;
  uint16_t NodeDescriptionGet(uint32_t modifier, std::span<uint8_t, 64> data) const;
  uint16_t SwitchInfoAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data);
  uint16_t GuidInfoAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data) const;
  // port_info.cc
  uint16_t PortInfoAccess(bool set, uint32_t modifier, uint8_t in_port, bool hide_mkey,
                          std::span<uint8_t, 64> data);
  uint16_t PortInfoSet(uint8_t port, const mad::PortInfo& req);
  void PortInfoGet(uint8_t port, uint8_t in_port, bool hide_mkey,
                   std::span<uint8_t, 64> data) const;
  void LinkStateChanged(Port& port, uint8_t new_state);
  // traps.cc
  void RaiseTrap(uint8_t type, uint16_t trap, std::span<const uint8_t> details);
  void RaiseTrap128();
  // Trap 259 for a data packet partition enforcement dropped at external port `port`.
  void RaiseTrap259(uint8_t port, std::span<const uint8_t> packet);
  // tables.cc
  uint16_t PKeyTableAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data);
  uint16_t SlToVlAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data);
  uint16_t VlArbAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data);
  uint16_t LftAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data);
  uint16_t MftAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data);
  // forwarding.cc
  RouteResult Drop(SwitchDrop why, uint8_t ingress);
  bool IsOwnLid(uint16_t lid) const;
  bool CanTransmit(uint8_t port, bool vl15) const;
  std::optional<uint8_t> UnicastPort(uint16_t dlid, SwitchDrop* why) const;
  RouteResult RouteSmpToSmi(uint8_t ingress, std::span<const uint8_t> packet, bool intact);
  RouteResult RouteByLid(uint8_t ingress, uint16_t dlid, bool vl15, std::vector<uint8_t> bytes);
  // partitions.cc: IBA 10.9.2 partition enforcement on external ports.
  // A refused packet counts in the port's P_KeyViolations and raises trap 259.
  bool PKeyAllowed(uint8_t port, uint16_t pkey, bool inbound, std::span<const uint8_t> packet);
  RouteResult EnforceOutbound(RouteResult result, uint16_t pkey, uint8_t ingress,
                              std::span<const uint8_t> packet);
  void AnswerSmp(uint8_t ingress, std::span<const uint8_t> packet, std::vector<Transmit>* out,
                 int depth);
  void Emit(uint8_t ingress, std::span<const uint8_t> packet, bool intact,
            std::vector<Transmit>* out, int depth, std::vector<uint8_t>* owned = nullptr);

  SwitchConfig config_;
  mad::SwitchInfo switch_info_;
  std::vector<Port> ports_;                    // [0] management port, [1..N] external
  std::vector<std::array<uint8_t, 8>> sl2vl_;  // [(in * (N + 1)) + out]
  std::vector<uint8_t> lft_;                   // LID -> port (0xFF: none)
  std::vector<uint16_t> mft_;                  // [(mlid - 0xC000) * positions + position]
  unsigned mft_positions_ = 1;
  std::vector<SwitchPortCounters> counters_;
  std::array<uint64_t, static_cast<std::size_t>(SwitchDrop::kCount)> drops_{};
  smp::Drop last_smp_drop_ = smp::Drop::kNone;
  uint64_t now_seconds_ = 0;
  std::optional<uint64_t> mkey_lease_start_;
  smp::TrapQueue traps_{0x5357};  // TIDs "SW": ours, not an SM's
};

}  // namespace softib::fabric
