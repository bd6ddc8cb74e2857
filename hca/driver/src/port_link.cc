#include "hca/driver/src/port_link.h"

#include "hca/driver/src/ring_service.h"
#include "hca/driver/src/soft_ca.h"

namespace softib::hca {

void PortLink::Transmit(std::vector<uint8_t> packet) { wire_->Queue(this, std::move(packet)); }

PacketWire::PacketWire(kernel::Node* node) {
  kernel::KeInitializeDpc(&dpc_, node, &PacketWire::DeliverDpc, this);
}

PacketWire::~PacketWire() = default;

void PacketWire::Queue(PortLink* link, std::vector<uint8_t> packet) {
  kernel::SpinLockGuard guard(lock_);
  if (link->peer_ == nullptr) return;  // a cut cable loses the packet, as a real one does
  link->peer_->Reference();
  queue_.push_back({link->peer_, link->peer_port_, std::move(packet)});
  if (!RingService::OnServiceThread()) kernel::KeInsertQueueDpc(&dpc_, nullptr, nullptr);
}

void PacketWire::Cut(PortLink* link) {
  kernel::SpinLockGuard guard(lock_);
  link->peer_ = nullptr;
}

void PacketWire::CutAllTo(const std::vector<PortLink*>& links, const SoftCa* ca) {
  kernel::SpinLockGuard guard(lock_);
  for (PortLink* link : links) {
    if (link->peer_ == ca) link->peer_ = nullptr;
  }
}

void PacketWire::DeliverDpc(kernel::Kdpc*, void* context, void*, void*) {
  static_cast<PacketWire*>(context)->DeliverQueued();
}

bool PacketWire::DeliverQueued() {
  {
    kernel::SpinLockGuard guard(lock_);
    if (delivering_ || queue_.empty()) return false;
    delivering_ = true;
  }
  for (;;) {
    Packet packet;
    {
      kernel::SpinLockGuard guard(lock_);
      if (queue_.empty()) {
        delivering_ = false;  // under the lock: a packet queued from now on finds it clear
        return true;
      }
      packet = std::move(queue_.front());
      queue_.pop_front();
    }
    packet.to->DeliverPacket(packet.port, packet.bytes);
    packet.to->Dereference();
  }
}

}  // namespace softib::hca
