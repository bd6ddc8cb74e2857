// Directed-route SMP processing (IBA 1.3 vol. 1, 14.2.2): what a node does with a
// directed-route SMP (management class SubnMgtDR, 0x81) it is about to send or has just
// received. Pure functions over the 256-byte MAD; they update HopPointer and ReturnPath in
// place exactly as the rules say, and know nothing of links, HCAs or switches beyond the
// node's kind and its number of ports. The HCA ports' SMA, the Access Layer's SMI and the
// fabric's switches share them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace softib::smp {

inline constexpr std::size_t kSmpBytes = 256;
// DrSLID/DrDLID value meaning "this end of the path is directed-routed" (IBA 14.2.1.2).
inline constexpr uint16_t kPermissiveLid = 0xFFFF;
// InitialPath/ReturnPath hold 64 entries, entry 0 unused: at most 63 hops.
inline constexpr uint8_t kMaxHopCount = 63;

// What the processing node is: only switches relay in the middle of a path.
struct NodeShape {
  bool is_switch = false;
  uint8_t num_ports = 0;  // physical ports (a switch's port 0 not counted)
};

enum class Verdict : uint8_t {
  kLocal,         // outbound: give it to this node's SMA; returning: to this node's SM
  kForward,       // transmit it (already updated) on Decision::port
  kForwardByLid,  // a LID-routed segment starts here: send it toward Decision::lid
  kDrop,
};

enum class Drop : uint8_t {
  kNone,
  kTooShort,          // fewer than 256 bytes
  kNotDirectedRoute,  // MgmtClass is not SubnMgtDR
  kBadHopCount,       // HopCount > 63
  kBadHopPointer,     // HopPointer outside what the direction and HopCount allow
  kNotASwitch,        // a CA/router asked to relay in the middle of a path
  kBadPort,           // the path names port 0 or a port the node does not have
  kWrongEgressPort,   // the sender's port is not the one the path names
  kLidSegmentAtCa,    // a CA/router asked to start a LID-routed segment
};
const char* ToString(Drop reason);

struct Decision {
  Verdict verdict = Verdict::kDrop;
  uint8_t port = 0;  // kForward
  uint16_t lid = 0;  // kForwardByLid: DrDLID (outbound) or DrSLID / the request's SLID
  Drop reason = Drop::kNone;

  static Decision Local() { return {Verdict::kLocal, 0, 0, Drop::kNone}; }
  static Decision Forward(uint8_t p) { return {Verdict::kForward, p, 0, Drop::kNone}; }
  static Decision ForwardByLid(uint16_t l) { return {Verdict::kForwardByLid, 0, l, Drop::kNone}; }
  static Decision Dropped(Drop r) { return {Verdict::kDrop, 0, 0, r}; }
};

// Send-side rules (C14-9 outbound, C14-13 returning) for a node about to transmit `smp`
// on `port`: the originator's first transmission (HopPointer 0 -> 1) or any relay. Moves
// HopPointer and checks that `port` is the one the path names. Returns kNone when the SMP
// may go.
Drop PrepareSend(std::span<uint8_t> smp, NodeShape node, uint8_t port);

// Receive-side rules for an SMP arriving on `in_port`, then the decision: give it to the
// local SMA/SM, relay it out of a port (the send-side rule for that port is applied, the
// bytes are ready to transmit), start a LID-routed segment, or drop it. ReturnPath and
// HopPointer are updated in place.
Decision OnArrival(std::span<uint8_t> smp, NodeShape node, uint8_t in_port);

// The responder's side: `smp` is a request this node's SMA consumed and has turned into
// its response (method, status and data already set). Sets D = 1 and decides where the
// response goes: back along ReturnPath (HopPointer moves), to this node's own SM (a
// HopCount-0 request), or LID-routed to `request_slid` (the LRH SLID of the request) when
// the request reached this node through a LID-routed final segment.
Decision Respond(std::span<uint8_t> smp, NodeShape node, uint16_t request_slid);

}  // namespace softib::smp
