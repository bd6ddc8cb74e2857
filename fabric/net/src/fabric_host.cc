#include "softib/fabric/fabric_host.h"

#include <chrono>

namespace softib::fabric {

namespace {
uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
// After work the thread watches for more this long before it sleeps: a wake-up of a
// sleeping vCPU costs tens of microseconds, a round trip across the fabric less.
constexpr uint64_t kSpinNs = 50'000;
}  // namespace

class FabricHost::HostLink final : public hca::Link {
 public:
  HostLink(FabricHost* host, uint32_t fabric_index) : host_(host), fabric_index_(fabric_index) {}
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    {
      std::lock_guard<std::mutex> lock(host_->mutex_);
      (void)host_->fabric_.ca_link(fabric_index_).Transmit(std::move(packet));
      host_->pending_ = true;
    }
    host_->Wake();
    return {};
  }

 private:
  FabricHost* host_;
  uint32_t fabric_index_;
};

FabricHost::FabricHost(uint32_t seed) : fabric_(seed) {}

FabricHost::~FabricHost() { Stop(); }

uint32_t FabricHost::AddCaPort() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto index = static_cast<uint32_t>(ca_ports_.size());
  auto port = std::make_unique<CaPort>();
  port->fabric_index = fabric_.AddCaPort([this, index](std::span<const uint8_t> packet) {
    outbox_.emplace_back(index, std::vector<uint8_t>(packet.begin(), packet.end()));
  });
  port->out = std::make_unique<HostLink>(this, port->fabric_index);
  ca_ports_.push_back(std::move(port));
  return index;
}

hca::Link& FabricHost::ca_link(uint32_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  return *ca_ports_.at(index)->out;
}

uint32_t FabricHost::fabric_port(uint32_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ca_ports_.at(index)->fabric_index;
}

void FabricHost::SetInbound(uint32_t index, std::shared_ptr<hca::Link> inbound) {
  std::lock_guard<std::mutex> lock(mutex_);
  ca_ports_.at(index)->inbound = std::move(inbound);
}

void FabricHost::SetTap(uint32_t index, Tap tap) {
  std::lock_guard<std::mutex> lock(mutex_);
  ca_ports_.at(index)->tap = tap ? std::make_shared<Tap>(std::move(tap)) : nullptr;
}

void FabricHost::Start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void FabricHost::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FabricHost::Wake() {
  work_hint_.store(true, std::memory_order_release);
  wake_.notify_one();
}

void FabricHost::Run() {
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> arrivals;
  std::vector<std::shared_ptr<hca::Link>> targets;
  std::vector<std::shared_ptr<Tap>> taps;
  uint64_t last_work = NowNs();
  for (;;) {
    // Briefly watch for work without the lock, then sleep until woken or the next due time.
    while (!work_hint_.load(std::memory_order_acquire) && NowNs() - last_work < kSpinNs) {
    }
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t due = fabric_.next_due();
    const uint64_t now = NowNs();
    if (!pending_ && !stop_ && due > now) {
      if (due == UINT64_MAX) {
        wake_.wait(lock, [&] { return pending_ || stop_; });
      } else {
        wake_.wait_for(lock, std::chrono::nanoseconds(due - now),
                       [&] { return pending_ || stop_; });
      }
    }
    if (stop_) return;
    pending_ = false;
    work_hint_.store(false, std::memory_order_relaxed);
    fabric_.AdvanceTo(NowNs());
    fabric_.Pump();
    arrivals.swap(outbox_);
    targets.clear();
    taps.clear();
    for (const auto& [index, bytes] : arrivals) {
      targets.push_back(ca_ports_[index]->inbound);
      taps.push_back(ca_ports_[index]->tap);
    }
    lock.unlock();
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
      if (taps[i] && (*taps[i])(arrivals[i].second)) continue;
      if (targets[i]) (void)targets[i]->Transmit(std::move(arrivals[i].second));
    }
    if (!arrivals.empty()) {
      delivered_.fetch_add(arrivals.size(), std::memory_order_relaxed);
      last_work = NowNs();
    }
    arrivals.clear();
  }
}

}  // namespace softib::fabric
