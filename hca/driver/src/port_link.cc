#include "hca/driver/src/port_link.h"

#include "hca/driver/src/ring_service.h"
#include "hca/driver/src/soft_ca.h"

namespace softib::hca {

namespace {
// Enough buffers for the packets of a deep queue of large writes in flight (16 RDMA WRITEs
// of 1 MiB at MTU 4096 are 4096 packets): a buffer freed here is malloc'd again by the
// sender, and at this size that churn trims and regrows the heap (page faults per packet).
// Only buffers that were once in flight are kept: at most ~17 MiB after such a burst.
constexpr std::size_t kMaxSpareBuffers = 4096;
// The ring service delivers what it sends itself (no thread hand-off for a lone packet);
// a burst this deep goes to the DPC thread instead, so that sending and receiving run on
// both CPUs at once.
constexpr std::size_t kHandOffDepth = 16;
// Packets for one CA received under one hold of its lock.
constexpr std::size_t kDeliveryRun = 64;
}  // namespace

std::vector<uint8_t> PortLink::Transmit(std::vector<uint8_t> packet) {
  return wire_->Queue(this, std::move(packet), true);
}

std::vector<uint8_t> PortLink::TransmitUnsealed(std::vector<uint8_t> packet) {
  return wire_->Queue(this, std::move(packet), false);
}

PacketWire::PacketWire(kernel::Node* node) {
  kernel::KeInitializeDpc(&dpc_, node, &PacketWire::DeliverDpc, this);
}

PacketWire::~PacketWire() = default;

std::vector<uint8_t> PacketWire::Queue(PortLink* link, std::vector<uint8_t> packet, bool sealed) {
  kernel::SpinLockGuard guard(lock_);
  // A cut cable loses the packet, as a real one does.
  if (link->peer_ == nullptr) return packet;
  link->peer_->Reference();
  queue_.push_back({link->peer_, link->peer_port_, std::move(packet), sealed});
  // A thread delivering now takes this packet too before it stops (it looks under lock_).
  // Once the DPC is queued, the packets queued before it runs are its too: no second
  // insert (each takes the DPC engine's lock and signals its thread, per packet).
  if (!delivering_ && !dpc_queued_ &&
      (!RingService::OnServiceThread() || queue_.size() >= kHandOffDepth)) {
    dpc_queued_ = true;
    kernel::KeInsertQueueDpc(&dpc_, nullptr, nullptr);
  }
  if (spare_buffers_.empty()) return {};
  std::vector<uint8_t> spare = std::move(spare_buffers_.back());
  spare_buffers_.pop_back();
  return spare;
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
  auto* wire = static_cast<PacketWire*>(context);
  {
    kernel::SpinLockGuard guard(wire->lock_);
    wire->dpc_queued_ = false;  // a packet queued from now on queues the DPC again
  }
  wire->DeliverQueued();
}

bool PacketWire::DeliverQueued() {
  {
    kernel::SpinLockGuard guard(lock_);
    if (delivering_ || queue_.empty()) return false;
    delivering_ = true;
  }
  // Whole batches per lock hold: the sender and this thread meet once per batch, not
  // once per packet.
  std::vector<Packet>& batch = batch_;
  SoftCa::InboundPacket run[kDeliveryRun];
  for (;;) {
    {
      kernel::SpinLockGuard guard(lock_);
      batch.clear();  // buffers the spares had no room for
      if (queue_.empty()) {
        delivering_ = false;  // under the lock: a packet queued from now on finds it clear
        return true;
      }
      batch.swap(queue_);
    }
    // Runs of packets for one CA go in under one hold of its lock (bounded, so that a
    // long burst does not keep the CA from its other callers).
    std::size_t i = 0;
    while (i < batch.size()) {
      SoftCa* to = batch[i].to;
      std::size_t n = 0;
      while (i + n < batch.size() && batch[i + n].to == to && n < std::size(run)) {
        run[n] = {batch[i + n].port, batch[i + n].bytes, batch[i + n].sealed};
        ++n;
      }
      to->DeliverPackets(std::span(run, n));
      for (std::size_t k = 0; k < n; ++k) batch[i + k].to->Dereference();
      // The run's buffers go back to the senders now, not after the whole batch: a batch
      // can be a deep queue's worth, and senders without a spare would malloc meanwhile.
      {
        kernel::SpinLockGuard guard(lock_);
        for (std::size_t k = 0; k < n && spare_buffers_.size() < kMaxSpareBuffers; ++k)
          spare_buffers_.push_back(std::move(batch[i + k].bytes));
      }
      i += n;
    }
  }
}

}  // namespace softib::hca
