// The Ethernet face of an IPoIB interface: what the host's network stack sees (a TAP device
// in softibd, a recorder in tests). The driver calls it; it never calls back into the driver
// from these calls. CONTRACT written by the lead.
#pragma once

#include <cstdint>
#include <span>

namespace softib::ipoib {

class EthernetFace {
 public:
  virtual ~EthernetFace() = default;
  // A frame for the host (Ethernet II, no FCS). IRQL <= DISPATCH (the driver's receive
  // DPC): it must not block; a face that cannot take the frame now drops it and counts.
  virtual void DeliverToHost(std::span<const uint8_t> frame) = 0;
  // Carrier: up once the interface can send (the broadcast group joined), down while it
  // cannot (port down, SM change being redone, CA removed). IRQL <= DISPATCH.
  virtual void SetCarrier(bool up) = 0;
  // The interface's MTU changed (the broadcast group's answer may lower what the port
  // offers); told before the carrier comes up with it. IRQL <= DISPATCH, must not block.
  virtual void SetMtu(uint32_t mtu) = 0;
  // (Added by the udflow work.) Back-pressure, as a NIC driver's netif_stop_queue /
  // netif_wake_queue: StopQueue when the driver's send ring is full (the frame just handed
  // is kept and sent later; the face should hand no more, so that the host's stack holds
  // them), WakeQueue once the driver can take frames again. Always in pairs: StopQueue,
  // then WakeQueue. A face that keeps handing frames meanwhile gets them held up to a bound,
  // then dropped and counted (Drop::kSendQueueFull). Called with the driver's interface
  // lock held (so that a StopQueue never arrives after the WakeQueue answering it), from
  // the face's own Transmit call (StopQueue) or the driver's DPC (WakeQueue): set a flag or
  // signal, never call into the driver. IRQL <= DISPATCH, must not block. The defaults
  // ignore them.
  virtual void StopQueue() {}
  virtual void WakeQueue() {}
};

}  // namespace softib::ipoib
