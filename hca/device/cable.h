// Links between ports. A port hands whole packets (LRH through VCRC) to its Link; whatever
// is at the other end delivers them to the peer port's receive entry. Today that is a
// back-to-back cable inside one process; the fabric (switches, UDP tunnels) plugs in behind
// the same interface later.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <set>
#include <span>
#include <vector>

namespace softib::hca {

class Link {
 public:
  virtual ~Link() = default;
  // Takes a whole packet. May hand back an empty buffer with capacity (one a delivered
  // packet no longer needs) for the sender's next packet: at several hundred thousand
  // packets a second, a malloc and fresh pages per packet cost more than the copy.
  virtual std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) = 0;
  // Takes an unsealed packet (packet.h: its ICRC/VCRC bytes not computed). A link that
  // carries packets where nobody can observe them (inside the daemon: no capture, no fault
  // injector, no tunnel) overrides this to pass them on unsealed and tells the receiver
  // so; every other link takes this default, which seals the packet and Transmits it.
  virtual std::vector<uint8_t> TransmitUnsealed(std::vector<uint8_t> packet);
};

using PacketSink = std::function<void(std::span<const uint8_t> packet)>;

// Faults a test cable injects so the reliable transports' recovery paths run. Decisions
// come from a seeded std::mt19937 (its output sequence is fixed by the standard), so a
// given seed replays the same losses on every machine.
struct FaultPlan {
  uint32_t drop_per_mille = 0;       // packet lost
  uint32_t duplicate_per_mille = 0;  // a copy goes to the back of the queue
  uint32_t reorder_per_mille = 0;    // packet overtaken by the one behind it
  uint32_t seed = 1;
};

struct FaultCounters {
  uint64_t dropped = 0, duplicated = 0, reordered = 0;
};

// Two ends joined by a queue in each direction. Transmit only queues, so a port never
// re-enters its peer from inside a send; Pump() delivers, including packets that the
// deliveries themselves cause (responses), until both directions are empty.
class BackToBackCable {
 public:
  BackToBackCable();
  BackToBackCable(const BackToBackCable&) = delete;
  BackToBackCable& operator=(const BackToBackCable&) = delete;

  Link& end(int i) { return ends_[i]; }
  // Plugs a receiver into end `i`: it gets the packets transmitted at the other end.
  void Attach(int i, PacketSink sink) { ends_[1 - i].deliver_to_ = std::move(sink); }
  // Sees every packet as it is delivered (captures); `from` is the sending end.
  void SetTap(std::function<void(int from, std::span<const uint8_t>)> tap) {
    tap_ = std::move(tap);
  }

  void SetFaults(const FaultPlan& plan) {
    faults_ = plan;
    rng_.seed(plan.seed);
  }
  // Drops the packet taken off the queues as number `nth` (0-based, counting every packet
  // the cable has handled): a loss placed exactly where a test wants it.
  void DropPacket(uint64_t nth) { drop_exactly_.insert(nth); }
  const FaultCounters& fault_counters() const { return fault_counters_; }

  // Delivers queued packets; returns how many.
  std::size_t Pump();
  std::size_t queued() const { return ends_[0].queue_.size() + ends_[1].queue_.size(); }

 private:
  class End final : public Link {
   public:
    std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
      queue_.push_back(std::move(packet));
      return {};
    }
    std::deque<std::vector<uint8_t>> queue_;  // packets sent from this end
    PacketSink deliver_to_;                   // the receiver on the far side of this end
  };
  // False when the fault plan consumes the packet at the front of `from` (dropped or
  // moved back); a duplicate is queued and the original still delivered.
  bool SurvivesFaults(End& from);

  End ends_[2];
  std::function<void(int, std::span<const uint8_t>)> tap_;
  FaultPlan faults_;
  std::mt19937 rng_;
  std::set<uint64_t> drop_exactly_;
  uint64_t handled_ = 0;
  FaultCounters fault_counters_;
};

}  // namespace softib::hca
