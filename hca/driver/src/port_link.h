// Cables inside the node. A port's transmit only queues the packet (under the wire's spin
// lock) and queues the delivery DPC; the DPC hands each packet to the peer CA with no lock
// held. So a CA never re-enters itself or its peer from inside a call (A→B→A ACKs are
// just more queued packets), and the lock order is always "CA, then wire".
//
// On the ring service's thread (ring_service.h) no DPC is queued: that thread delivers what
// it transmitted itself, after its pass, with no CA lock held (DeliverQueued) — the same
// rule without a thread hop per packet. One thread delivers at a time, so packets reach a
// CA in the order they were queued whichever thread delivers them.
#pragma once

#include <cstdint>
#include <vector>

#include "hca/device/cable.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/spin_lock.h"

namespace softib::hca {

class SoftCa;
class PacketWire;

// The transmit side of one cabled port: packets go to `peer`'s port `peer_port`.
class PortLink final : public Link {
 public:
  PortLink(PacketWire* wire, SoftCa* peer, uint8_t peer_port)
      : wire_(wire), peer_(peer), peer_port_(peer_port) {}
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override;
  // An in-node cable has no capture and no fault injector: nobody can observe a packet on
  // it, so it carries packets unsealed (CRC offload) and the receiving CA skips the checks.
  std::vector<uint8_t> TransmitUnsealed(std::vector<uint8_t> packet) override;

 private:
  friend class PacketWire;
  PacketWire* const wire_;
  SoftCa* peer_;  // wire lock held; null once the cable is cut
  const uint8_t peer_port_;
};

// The node's packet queue and delivery DPC.
class PacketWire {
 public:
  explicit PacketWire(kernel::Node* node);
  ~PacketWire();  // the queue must be drained (Flush) and the links cut
  PacketWire(const PacketWire&) = delete;
  PacketWire& operator=(const PacketWire&) = delete;

  // Makes `link` deliver nowhere (CA removal); packets already queued still go.
  void Cut(PortLink* link);
  // Cuts each of `links` that delivers to `ca`.
  void CutAllTo(const std::vector<PortLink*>& links, const SoftCa* ca);
  // Delivers the queued packets on the calling thread, unless another thread is delivering
  // (it then takes them too). True if this call delivered any. No lock may be held.
  bool DeliverQueued();

 private:
  friend class PortLink;
  struct Packet {
    SoftCa* to;  // referenced
    uint8_t port;
    std::vector<uint8_t> bytes;
    bool sealed;  // false: CRCs not computed (PortLink::TransmitUnsealed)
  };
  // Queues `packet` and hands back a delivered packet's buffer for the sender's next one.
  std::vector<uint8_t> Queue(PortLink* link, std::vector<uint8_t> packet, bool sealed);
  static void DeliverDpc(kernel::Kdpc* dpc, void* context, void* arg1, void* arg2);

  kernel::KSpinLock lock_;
  // Vectors, swapped between the senders and the delivering thread: both keep their
  // capacity, so queueing a packet allocates nothing once a burst's depth was seen.
  std::vector<Packet> queue_;
  std::vector<Packet> batch_;  // the delivering thread's (delivering_ set), unlocked
  // Buffers of delivered packets, reused by senders (bounded: a burst's worth).
  std::vector<std::vector<uint8_t>> spare_buffers_;
  bool delivering_ = false;  // lock_ held: some thread is in DeliverQueued
  bool dpc_queued_ = false;  // lock_ held: dpc_ queued and not yet started
  kernel::Kdpc dpc_;
};

}  // namespace softib::hca
