// The driver tests' switch: one subnet over ports of the node's CAs, each plugged into it by
// NodeStack::PlugExternal (an external cable). A packet goes by its LRH DLID to the port with
// that LID; a multicast DLID (0xC000 and up) to every other port, whose HCA keeps it for the QPs
// attached to the group. No SMA, no forwarding tables: the ports come up Active with the LIDs
// the node gave them, and the test SA (test_sa.h, one subnet) answers their SA requests.
// Forwarding only queues (the inbound end hands the packet to the node's delivery DPC), as a
// port's Link must: a port may transmit with its CA's lock held.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "hca/device/cable.h"
#include "softib/mad/mad_sm.h"
#include "softib/stack/node_stack.h"

namespace softib::ipoib::test {

class TestSwitch {
 public:
  // Plugs `ports` (CA GUID, port number) into the switch; false when a plug failed.
  bool Plug(stack::NodeStack& node, const std::vector<std::pair<uint64_t, uint8_t>>& ports) {
    ports_.resize(ports.size());
    for (size_t n = 0; n < ports.size(); ++n) {
      Port& p = ports_[n];
      p.link = std::make_unique<Ingress>(this, n);
      {
        std::array<uint8_t, 256> request{}, response{};
        request[0] = 1;
        request[1] = 0x01;
        request[2] = 1;
        request[3] = 0x01;   // SubnGet
        request[17] = 0x15;  // PortInfo
        request[23] = ports[n].second;
        if (node.LocalMad(ports[n].first, ports[n].second, request, response) !=
            kernel::Status::SUCCESS) {
          return false;
        }
        mad::PortInfo info;
        if (!info.Unpack(std::span<const uint8_t>(response.data() + 64, 64))) return false;
        std::lock_guard guard(mutex_);
        p.lid = info.LID;
      }
      std::shared_ptr<hca::Link> inbound;
      if (node.PlugExternal(ports[n].first, ports[n].second, p.link.get(), &inbound) !=
          kernel::Status::SUCCESS) {
        return false;
      }
      std::lock_guard guard(mutex_);
      p.inbound = std::move(inbound);
    }
    return true;
  }
  // Forgets the inbound ends (before the node goes).
  void Unplug() {
    std::lock_guard guard(mutex_);
    for (Port& p : ports_) p.inbound.reset();
  }

 private:
  class Ingress final : public hca::Link {
   public:
    Ingress(TestSwitch* owner, size_t port) : owner_(owner), port_(port) {}
    std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
      owner_->Forward(port_, packet);
      packet.clear();
      return packet;
    }

   private:
    TestSwitch* owner_;
    size_t port_;
  };
  struct Port {
    std::unique_ptr<Ingress> link;
    std::shared_ptr<hca::Link> inbound;  // mutex_
    uint16_t lid = 0;                    // mutex_
  };

  void Forward(size_t from, const std::vector<uint8_t>& packet) {
    if (packet.size() < 8) return;
    const uint16_t dlid = static_cast<uint16_t>(packet[2] << 8 | packet[3]);
    std::vector<std::shared_ptr<hca::Link>> to;
    {
      std::lock_guard guard(mutex_);
      for (size_t n = 0; n < ports_.size(); ++n) {
        if (ports_[n].inbound == nullptr) continue;
        if (dlid >= 0xC000 && dlid != 0xFFFF ? n != from : ports_[n].lid == dlid) {
          to.push_back(ports_[n].inbound);
        }
      }
    }
    for (const auto& link : to) link->Transmit(packet);
  }

  std::mutex mutex_;
  std::vector<Port> ports_;  // sized by Plug
};

}  // namespace softib::ipoib::test
