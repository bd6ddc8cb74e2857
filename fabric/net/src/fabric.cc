#include "softib/fabric/fabric.h"

#include <algorithm>
#include <stdexcept>

#include "hca/device/packet.h"
#include "softib/wire/capture_file.h"

namespace softib::fabric {

// What a CA port transmits into: the cable its port is plugged into.
class Fabric::CaPortLink final : public hca::Link {
 public:
  CaPortLink(Fabric* fabric, uint32_t index) : fabric_(fabric), index_(index) {}
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    fabric_->Send(CableEnd{CableEnd::Kind::kCaPort, index_, 0}, std::move(packet));
    return {};
  }
  // CRC offload: the packet is sealed only where someone can observe it (Enqueue, Arrive).
  std::vector<uint8_t> TransmitUnsealed(std::vector<uint8_t> packet) override {
    fabric_->Send(CableEnd{CableEnd::Kind::kCaPort, index_, 0}, std::move(packet), false, false);
    return {};
  }

 private:
  Fabric* fabric_;
  uint32_t index_;
};

Fabric::Fabric(uint32_t seed) : rng_(seed) {}
Fabric::~Fabric() = default;

uint32_t Fabric::AddSwitch(SwitchConfig config) {
  switches_.push_back(std::make_unique<Switch>(std::move(config)));
  switch_cables_.emplace_back(std::size_t{switches_.back()->num_ports()} + 1, -1);
  watched_.push_back(false);
  watch_all_ = true;
  return static_cast<uint32_t>(switches_.size() - 1);
}

uint32_t Fabric::AddCaPort(Deliver deliver, LinkState link_state) {
  const auto index = static_cast<uint32_t>(ca_ports_.size());
  ca_ports_.push_back({std::move(deliver),
                       {},
                       std::move(link_state),
                       std::make_unique<CaPortLink>(this, index),
                       -1,
                       0});
  return index;
}

uint32_t Fabric::AddOwningCaPort(DeliverOwned deliver, LinkState link_state) {
  const auto index = static_cast<uint32_t>(ca_ports_.size());
  ca_ports_.push_back({{},
                       std::move(deliver),
                       std::move(link_state),
                       std::make_unique<CaPortLink>(this, index),
                       -1,
                       0});
  return index;
}

hca::Link& Fabric::ca_link(uint32_t ca_port) { return *ca_ports_.at(ca_port).link; }

bool Fabric::ca_port_up(uint32_t ca_port) const {
  const CaPort& ca = ca_ports_.at(ca_port);
  return ca.cable != -1 && cables_[static_cast<std::size_t>(ca.cable)].up;
}

uint32_t Fabric::Connect(CableEnd a, CableEnd b) {
  const auto index = static_cast<uint32_t>(cables_.size());
  auto claim = [&](const CableEnd& end, int side) {
    if (end.kind == CableEnd::Kind::kSwitch) {
      auto& ports = switch_cables_.at(end.index);
      if (end.port == 0 || end.port >= ports.size())
        throw std::invalid_argument("Connect: no such switch port");
      if (ports[end.port] != -1) throw std::invalid_argument("Connect: switch port already cabled");
      ports[end.port] = index;
    } else {
      CaPort& ca = ca_ports_.at(end.index);
      if (ca.cable != -1) throw std::invalid_argument("Connect: CA port already cabled");
      ca.cable = index;
      ca.side = side;
    }
  };
  claim(a, 0);
  claim(b, 1);
  Cable cable;
  cable.end[0] = a;
  cable.end[1] = b;
  cables_.push_back(std::move(cable));
  NotifyEnd(a, true);
  NotifyEnd(b, true);
  return index;
}

void Fabric::SetFaults(uint32_t cable, int direction, const LinkFaults& faults) {
  Cable& c = cables_.at(cable);
  if (direction != 1) c.dir[0].faults = faults;
  if (direction != 0) c.dir[1].faults = faults;
}

void Fabric::SetCableUp(uint32_t cable, bool up) {
  Cable& c = cables_.at(cable);
  if (c.up == up) return;
  c.up = up;
  if (!up) {
    for (Direction& d : c.dir) {
      d.counters.dropped_down += d.queue.size();
      queued_ -= d.queue.size();
      d.queue.clear();  // still listed: Pump takes it off
    }
  }
  NotifyEnd(c.end[0], up);
  NotifyEnd(c.end[1], up);
}

void Fabric::NotifyEnd(const CableEnd& end, bool up) {
  if (end.kind == CableEnd::Kind::kSwitch) {
    switches_[end.index]->SetLinkUp(end.port, up);
    Watch(end.index);
  } else if (const LinkState& notify = ca_ports_[end.index].link_state) {
    notify(up);
  }
}

void Fabric::StartCapture(uint32_t cable) { cables_.at(cable).capturing = true; }

void Fabric::StopCapture(uint32_t cable) {
  Cable& c = cables_.at(cable);
  c.capturing = false;
  c.captured.clear();
  c.captured.shrink_to_fit();
}

std::string Fabric::WriteCapture(uint32_t cable, const std::string& path) const {
  std::vector<capture::CapturedPacket> packets;
  for (const auto& [erf_time, bytes] : cables_.at(cable).captured)
    packets.push_back({erf_time, capture::kErfTypeInfiniband, bytes});
  return capture::WriteErfFile(path, packets);
}

bool Fabric::Outbound(const CableEnd& from, uint32_t* cable, int* direction) const {
  int64_t index = -1;
  int side = 0;
  if (from.kind == CableEnd::Kind::kSwitch) {
    const auto& ports = switch_cables_[from.index];
    if (from.port < ports.size()) index = ports[from.port];
    if (index >= 0)
      side = cables_[index].end[0].kind == CableEnd::Kind::kSwitch &&
                     cables_[index].end[0].index == from.index &&
                     cables_[index].end[0].port == from.port
                 ? 0
                 : 1;
  } else {
    index = ca_ports_[from.index].cable;
    side = ca_ports_[from.index].side;
  }
  if (index < 0) return false;
  *cable = static_cast<uint32_t>(index);
  *direction = side;
  return true;
}

void Fabric::Send(const CableEnd& from, std::vector<uint8_t> packet, bool intact, bool sealed) {
  uint32_t cable = 0;
  int direction = 0;
  if (!Outbound(from, &cable, &direction)) return;  // an uncabled port: lost
  Enqueue(cables_[cable], direction, std::move(packet), intact, sealed);
}

void Fabric::Enqueue(Cable& cable, int direction, std::vector<uint8_t> packet, bool intact,
                     bool sealed) {
  Direction& d = cable.dir[direction];
  if (!cable.up) {
    ++d.counters.dropped_down;
    return;
  }
  const LinkFaults& f = d.faults;
  const uint64_t due = now_ns_ + f.delay_ns;
  if (f.loss == 0 && f.corrupt == 0 && f.duplicate == 0 && f.reorder == 0) {
    d.queue.push_back({due, std::move(packet), intact, sealed});
    ++queued_;
    List(cable, direction);
    return;
  }
  // A fault injector observes the packet: exact bytes from here on (a corruption must hit a
  // packet whose CRCs the receiver checks).
  if (!sealed) {
    hca::SealPacket(packet);
    sealed = true;
  }
  // Four draws per packet whatever happens, so one decision never shifts the others.
  const uint32_t loss = rng_() % 1000, corrupt = rng_() % 1000, dup = rng_() % 1000,
                 reorder = rng_() % 1000;
  const uint32_t where = rng_();
  if (loss < f.loss) {
    ++d.counters.lost;
    return;
  }
  if (corrupt < f.corrupt && !packet.empty()) {
    ++d.counters.corrupted;
    packet[where % packet.size()] ^= 0x5A;
    intact = false;  // the next switch checks its CRCs (and drops it)
  }
  if (dup < f.duplicate) {
    ++d.counters.duplicated;
    d.queue.push_back({due, packet, intact, sealed});
    ++queued_;
  }
  ++queued_;
  List(cable, direction);
  if (reorder < f.reorder && !d.queue.empty()) {
    ++d.counters.reordered;
    d.queue.insert(d.queue.end() - 1,
                   {due, std::move(packet), intact, sealed});  // overtakes the last
    return;
  }
  d.queue.push_back({due, std::move(packet), intact, sealed});
}

void Fabric::List(Cable& cable, int direction) {
  Direction& d = cable.dir[direction];
  if (d.listed) return;
  d.listed = true;
  ready_.push_back(static_cast<uint32_t>(&cable - cables_.data()) * 2 + direction);
}

void Fabric::Arrive(const CableEnd& at, std::vector<uint8_t>& packet, bool intact, bool sealed) {
  if (at.kind == CableEnd::Kind::kCaPort) {
    CaPort& ca = ca_ports_[at.index];
    if (ca.deliver_owned) return ca.deliver_owned(std::move(packet), sealed);
    if (!sealed) hca::SealPacket(packet);
    if (ca.deliver) ca.deliver(packet);
    return;
  }
  // A switch relays data packets by their LRH and BTH alone, as they came (sealed or not);
  // a VL15 packet may be for its SMA, which checks and rewrites: exact bytes first.
  if (!sealed && !packet.empty() && (packet[0] >> 4) == 15) {
    hca::SealPacket(packet);
    sealed = true;
  }
  transmits_.clear();
  switches_[at.index]->ReceiveOwned(at.port, packet, intact, &transmits_);
  Watch(at.index);
  // What a switch sends on is as sealed as what came in: it rewrites and answers only VL15
  // packets (sealed above) and builds its traps with their CRCs.
  for (Transmit& out : transmits_)
    Send(CableEnd{CableEnd::Kind::kSwitch, at.index, out.port}, std::move(out.bytes), out.intact,
         sealed);
}

std::size_t Fabric::Pump() {
  std::size_t delivered = 0;
  // The switches' traps that are due go out first (their SMAs have no clock of their own).
  if (watch_all_) {
    watch_all_ = false;
    for (uint32_t i = 0; i < switches_.size(); ++i) Watch(i);
  }
  polling_.swap(trap_watch_);
  trap_watch_.clear();
  for (const uint32_t i : polling_) {
    for (Transmit& out : switches_[i]->PollTraps(now_ns_))
      Send(CableEnd{CableEnd::Kind::kSwitch, i, out.port}, std::move(out.bytes), out.intact);
    watched_[i] = false;
    if (switches_[i]->trap_outstanding()) Watch(i);
  }
  for (bool progress = true; progress;) {
    progress = false;
    // One packet per direction per round keeps the directions interleaved fairly; what the
    // deliveries queue joins the next round.
    for (std::size_t n = ready_.size(); n > 0; --n) {
      const uint32_t id = ready_.front();
      ready_.pop_front();
      Cable& cable = cables_[id / 2];
      const int direction = static_cast<int>(id % 2);
      Direction& d = cable.dir[direction];
      if (d.queue.empty()) {
        d.listed = false;
        continue;
      }
      if (d.queue.front().due_ns > now_ns_) {
        ready_.push_back(id);
        continue;
      }
      std::vector<uint8_t> packet = std::move(d.queue.front().bytes);
      const bool intact = d.queue.front().intact;
      bool sealed = d.queue.front().sealed;
      d.queue.pop_front();
      --queued_;
      if (d.queue.empty()) {
        d.listed = false;
      } else {
        ready_.push_back(id);
      }
      ++d.counters.carried;
      if (cable.capturing) {
        if (!sealed) hca::SealPacket(packet);  // a capture shows exact packets
        sealed = true;
        cable.captured.emplace_back(capture_clock_.Next(), packet);
      }
      Arrive(cable.end[1 - direction], packet, intact, sealed);
      ++delivered;
      progress = true;
    }
  }
  return delivered;
}

uint64_t Fabric::next_due() const {
  uint64_t due = UINT64_MAX;
  if (watch_all_) {
    for (const auto& sw : switches_) due = std::min(due, sw->next_trap_ns());
  } else {
    for (const uint32_t i : trap_watch_) due = std::min(due, switches_[i]->next_trap_ns());
  }
  for (const uint32_t id : ready_) {
    const Direction& d = cables_[id / 2].dir[id % 2];
    if (!d.queue.empty()) due = std::min(due, d.queue.front().due_ns);
  }
  return due;
}

void Fabric::Watch(uint32_t index) {
  if (watched_[index]) return;
  watched_[index] = true;
  trap_watch_.push_back(index);
}

std::size_t Fabric::in_flight() const { return queued_; }

}  // namespace softib::fabric
