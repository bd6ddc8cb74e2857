// A fabric inside one process: switches (fabric/switch) and CA ports joined by cables that
// carry whole packets (LRH through VCRC), with per-direction fault injection, delay, link
// flaps and capture. No threads of its own: its host hands it time (AdvanceTo) and runs
// deliveries (Pump), as the tests do with a fake clock; softibd will drive it from its
// delivery thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "hca/device/cable.h"
#include "softib/fabric/switch.h"
#include "softib/wire/capture_file.h"

namespace softib::fabric {

// One end of a cable: a switch port (1..N) or a CA port.
struct CableEnd {
  enum class Kind : uint8_t { kSwitch, kCaPort } kind = Kind::kSwitch;
  uint32_t index = 0;  // switch index, or CA-port index
  uint8_t port = 0;    // switch port number (unused for a CA port)
};

// Faults of one direction of a cable, changeable at any time. Rates are per mille; the
// decisions come from the fabric's seeded generator, so a seed replays a run exactly.
struct LinkFaults {
  uint32_t loss = 0;       // the packet vanishes
  uint32_t corrupt = 0;    // one byte flipped: the receiver's CRC check drops it
  uint32_t duplicate = 0;  // delivered twice
  uint32_t reorder = 0;    // overtaken by the packet queued behind it
  uint64_t delay_ns = 0;   // added to every packet's flight
};

struct LinkCounters {
  uint64_t carried = 0;  // delivered to the far end
  uint64_t lost = 0, corrupted = 0, duplicated = 0, reordered = 0;
  uint64_t dropped_down = 0;  // sent into, or in flight on, a cable that went down
};

class Fabric {
 public:
  using Deliver = std::function<void(std::span<const uint8_t> packet)>;
  // Takes the packet's buffer; `sealed` false: its ICRC/VCRC were never computed (the CRC
  // offload of hca/device/packet.h: the packet came unsealed and nobody observed it).
  using DeliverOwned = std::function<void(std::vector<uint8_t>&& packet, bool sealed)>;
  using LinkState = std::function<void(bool up)>;

  explicit Fabric(uint32_t seed = 1);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  uint32_t AddSwitch(SwitchConfig config);
  // The caller may change anything in it: the next Pump looks at every switch's traps.
  Switch& switch_at(uint32_t index) {
    watch_all_ = true;
    return *switches_.at(index);
  }
  std::size_t num_switches() const { return switches_.size(); }

  // A CA port: what the fabric delivers to it goes to `deliver`; `link_state` hears its
  // cable come up or go down. The CA port transmits into ca_link(index).
  uint32_t AddCaPort(Deliver deliver, LinkState link_state = {});
  // The same for a receiver that takes the buffers (no copy on delivery) and unsealed
  // packets. A plain AddCaPort's `deliver` only ever sees sealed packets.
  uint32_t AddOwningCaPort(DeliverOwned deliver, LinkState link_state = {});
  hca::Link& ca_link(uint32_t ca_port);
  // Whether CA port `ca_port` is cabled and its cable up.
  bool ca_port_up(uint32_t ca_port) const;

  // Cables a and b (both ends free); the link comes up at once. Returns the cable index.
  uint32_t Connect(CableEnd a, CableEnd b);
  // direction 0: a -> b, 1: b -> a, -1: both.
  void SetFaults(uint32_t cable, int direction, const LinkFaults& faults);
  // A flap: down loses what is in flight and tells both ends; up retrains (switch ports
  // come back in Init, as after any link-up: the SM has to activate them again).
  void SetCableUp(uint32_t cable, bool up);
  bool cable_up(uint32_t cable) const { return cables_.at(cable).up; }
  std::size_t num_cables() const { return cables_.size(); }
  const CableEnd& cable_end(uint32_t cable, int side) const { return cables_.at(cable).end[side]; }
  const LinkFaults& faults(uint32_t cable, int direction) const {
    return cables_.at(cable).dir[direction].faults;
  }
  const LinkCounters& counters(uint32_t cable, int direction) const {
    return cables_.at(cable).dir[direction].counters;
  }
  // Records every packet the cable delivers (both directions) until StopCapture; the
  // result is written as an ERF file (record type InfiniBand) that tshark decodes. Each
  // record carries the wall-clock time it was captured (not the fabric's clock, which
  // AdvanceTo drives), strictly increasing within the capture.
  void StartCapture(uint32_t cable);
  std::string WriteCapture(uint32_t cable, const std::string& path) const;
  // Ends the recording and forgets what it held.
  void StopCapture(uint32_t cable);
  bool capturing(uint32_t cable) const { return cables_.at(cable).capturing; }
  std::size_t captured(uint32_t cable) const { return cables_.at(cable).captured.size(); }

  // Time (nanoseconds, any origin) for delays; packets are due at send time + delay.
  void AdvanceTo(uint64_t now_ns) { now_ns_ = now_ns; }
  uint64_t now() const { return now_ns_; }
  // Delivers every packet that is due, including those the deliveries cause, until none
  // is; returns how many were delivered.
  std::size_t Pump();
  std::size_t in_flight() const;
  // When the earliest queued packet is due (UINT64_MAX when nothing is in flight).
  uint64_t next_due() const;

 private:
  struct Queued {
    uint64_t due_ns;
    std::vector<uint8_t> bytes;
    bool intact = false;  // a switch built these bytes and nothing changed them (Switch::Receive)
    bool sealed = true;   // false: CRCs not computed yet (CA ports' TransmitUnsealed)
  };
  struct Direction {
    std::deque<Queued> queue;
    LinkFaults faults;
    LinkCounters counters;
    bool listed = false;  // in ready_
  };
  struct Cable {
    CableEnd end[2];
    Direction dir[2];  // dir[i]: from end[i] to end[1 - i]
    bool up = true;
    bool capturing = false;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> captured;  // ERF time, bytes
  };
  class CaPortLink;
  struct CaPort {
    Deliver deliver;
    DeliverOwned deliver_owned;  // instead of `deliver` (AddOwningCaPort)
    LinkState link_state;
    std::unique_ptr<CaPortLink> link;
    int64_t cable = -1;
    int side = 0;
  };

  // Where (cable, direction) a packet sent from `from` goes; false if not cabled.
  bool Outbound(const CableEnd& from, uint32_t* cable, int* direction) const;
  void Send(const CableEnd& from, std::vector<uint8_t> packet, bool intact = false,
            bool sealed = true);
  // Seals an unsealed packet where it can be observed: a cable with faults (before they act)
  // or a capture, a switch's management port (VL15), a CA port that takes sealed packets.
  void Enqueue(Cable& cable, int direction, std::vector<uint8_t> packet, bool intact, bool sealed);
  // Puts a direction that just got a packet on the ready list (once).
  void List(Cable& cable, int direction);
  // `packet` is moved on by a switch that relays it unchanged (no copy per hop).
  void Arrive(const CableEnd& at, std::vector<uint8_t>& packet, bool intact, bool sealed);
  void NotifyEnd(const CableEnd& end, bool up);
  // A switch that got a packet or a link change may have a trap to send now.
  void Watch(uint32_t index);

  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<Transmit> transmits_;                  // Arrive's, reused: what a switch sends on
  std::vector<std::vector<int64_t>> switch_cables_;  // [switch][port] -> cable or -1
  std::vector<CaPort> ca_ports_;
  std::vector<Cable> cables_;
  // Directions with packets queued (cable * 2 + direction), in the order Pump visits them:
  // a pump costs what is in flight, not the size of the fabric (13,284 nodes: ~35k cables).
  std::deque<uint32_t> ready_;
  std::size_t queued_ = 0;  // packets in every queue
  // The switches whose traps Pump polls: those touched since their last poll and those
  // with a trap outstanding (not all 1,620 of ft-k36 on every pump).
  std::vector<uint32_t> trap_watch_, polling_;
  std::vector<bool> watched_;  // [switch]: in trap_watch_
  bool watch_all_ = true;      // switch_at() handed a switch out
  std::mt19937 rng_;
  uint64_t now_ns_ = 0;
  capture::ErfClock capture_clock_;  // stamps captured packets with the time of day
};

}  // namespace softib::fabric
