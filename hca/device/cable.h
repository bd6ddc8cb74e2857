// Links between ports. A port hands whole packets (LRH through VCRC) to its Link; whatever
// is at the other end delivers them to the peer port's receive entry. Today that is a
// back-to-back cable inside one process; the fabric (switches, UDP tunnels) plugs in behind
// the same interface later.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

namespace softib::hca {

class Link {
 public:
  virtual ~Link() = default;
  virtual void Transmit(std::vector<uint8_t> packet) = 0;
};

using PacketSink = std::function<void(std::span<const uint8_t> packet)>;

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

  // Delivers queued packets; returns how many.
  std::size_t Pump();
  std::size_t queued() const { return ends_[0].queue_.size() + ends_[1].queue_.size(); }

 private:
  class End final : public Link {
   public:
    void Transmit(std::vector<uint8_t> packet) override { queue_.push_back(std::move(packet)); }
    std::deque<std::vector<uint8_t>> queue_;  // packets sent from this end
    PacketSink deliver_to_;                   // the receiver on the far side of this end
  };
  End ends_[2];
  std::function<void(int, std::span<const uint8_t>)> tap_;
};

}  // namespace softib::hca
