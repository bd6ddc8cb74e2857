#include "hca/driver/src/port_link.h"

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
  kernel::KeInsertQueueDpc(&dpc_, nullptr, nullptr);
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
  auto* self = static_cast<PacketWire*>(context);
  for (;;) {
    Packet packet;
    {
      kernel::SpinLockGuard guard(self->lock_);
      if (self->queue_.empty()) return;
      packet = std::move(self->queue_.front());
      self->queue_.pop_front();
    }
    packet.to->DeliverPacket(packet.port, packet.bytes);
    packet.to->Dereference();
  }
}

}  // namespace softib::hca
