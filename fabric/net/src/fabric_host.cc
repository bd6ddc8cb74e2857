#include "softib/fabric/fabric_host.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "hca/device/packet.h"
#include "softib/rings/spin_gate.h"

namespace softib::fabric {

namespace {
uint64_t NowNs() { return FabricHost::Now(); }
// After work the thread watches for more this long before it sleeps: a wake-up of a
// sleeping vCPU costs tens of microseconds, a round trip across the fabric less.
constexpr uint64_t kSpinNs = 50'000;
}  // namespace

class FabricHost::HostLink final : public hca::Link {
 public:
  HostLink(FabricHost* host, uint32_t fabric_index) : host_(host), fabric_index_(fabric_index) {}
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    return Queue(std::move(packet), true);
  }
  // CRC offload: the fabric seals the packet where it can be observed.
  std::vector<uint8_t> TransmitUnsealed(std::vector<uint8_t> packet) override {
    return Queue(std::move(packet), false);
  }

 private:
  std::vector<uint8_t> Queue(std::vector<uint8_t> packet, bool sealed) {
    bool sleeping;
    {  // one lock hold per packet: queue it, see whether the thread sleeps
      std::lock_guard<std::mutex> lock(host_->inbox_mutex_);
      host_->inbox_.push_back({fabric_index_, std::move(packet), sealed});
      sleeping = host_->sleeping_;
      host_->sleeping_ = false;  // one eventfd write wakes it: the SM's window is one burst
    }
    host_->work_hint_.store(true, std::memory_order_release);
    if (sleeping) host_->Kick();
    return {};
  }

  FabricHost* host_;
  uint32_t fabric_index_;
};

FabricHost::FabricHost(uint32_t seed) : fabric_(seed) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::runtime_error("FabricHost: eventfd failed");
}

FabricHost::~FabricHost() {
  Stop();
  close(wake_fd_);
}

uint64_t FabricHost::Now() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void FabricHost::AddSource(int fd, Service service) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable()) throw std::logic_error("FabricHost::AddSource after Start");
  sources_.push_back({fd, std::move(service), 0});
}

void FabricHost::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    tasks_.push_back(std::move(task));
  }
  Wake();
}

uint32_t FabricHost::AddCaPort() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto index = static_cast<uint32_t>(ca_ports_.size());
  auto port = std::make_unique<CaPort>();
  port->fabric_index = fabric_.AddOwningCaPort(
      [this, index](std::vector<uint8_t>&& packet, bool sealed) {
        outbox_.push_back({index, std::move(packet), sealed});  // the buffer, not a copy
      },
      // Inside With (the fabric changes cables only there): told after the lock is let go.
      [this, index](bool up) {
        if (ca_ports_[index]->link_state) link_news_.emplace_back(index, up);
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

void FabricHost::SetLinkState(uint32_t index, LinkState link_state) {
  std::lock_guard<std::mutex> lock(mutex_);
  ca_ports_.at(index)->link_state =
      link_state ? std::make_shared<LinkState>(std::move(link_state)) : nullptr;
}

bool FabricHost::ca_port_up(uint32_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fabric_.ca_port_up(ca_ports_.at(index)->fabric_index);
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
    tasks_.clear();
  }
  Wake();
  if (thread_.joinable()) thread_.join();
}

void FabricHost::Wake() {
  work_hint_.store(true, std::memory_order_release);
  bool sleeping;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = true;
    std::lock_guard<std::mutex> inbox_lock(inbox_mutex_);
    sleeping = sleeping_;
    sleeping_ = false;  // the first write wakes it; more would be system calls for nothing
  }
  if (sleeping) Kick();
}

void FabricHost::Kick() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

bool FabricHost::ServeSources(std::vector<pollfd>& fds) {
  bool ran = false;
  const uint64_t now = NowNs();
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    pollfd& p = fds[i + 1];
    if ((p.revents & (POLLIN | POLLERR)) != 0 || now >= sources_[i].due) {
      sources_[i].due = sources_[i].service(now);
      ran = true;
    }
    p.revents = 0;
  }
  return ran;
}

void FabricHost::Run() {
  std::vector<HostPacket> arrivals, inbound;
  std::vector<std::shared_ptr<hca::Link>> targets;
  std::vector<std::shared_ptr<Tap>> taps;
  std::vector<std::function<void()>> tasks;
  std::vector<std::pair<uint32_t, bool>> news;
  std::vector<std::shared_ptr<LinkState>> news_targets;
  // fds[0]: the wake-up eventfd; fds[1 + i]: source i.
  std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
  for (const Source& source : sources_) fds.push_back({source.fd, POLLIN, 0});
  const auto source_fds = static_cast<nfds_t>(sources_.size());
  uint64_t last_work = NowNs();
  for (;;) {
    // Briefly watch for work without the lock (and for datagrams), then sleep in poll until
    // woken, a source is readable or the next due time.
    // Not while every CPU is busy (hca/rings/spin_gate.h): the spin would hold a CPU that
    // the ring services and pollers this thread hands packets to are waiting for.
    bool polled = false;
    const uint64_t spin_ns = rings::SpinMayPay() ? kSpinNs : 0;
    while (!work_hint_.load(std::memory_order_acquire) && NowNs() - last_work < spin_ns) {
      if (source_fds != 0 && poll(fds.data() + 1, source_fds, 0) > 0) {
        polled = true;
        break;
      }
    }
    uint64_t due = UINT64_MAX;
    for (const Source& source : sources_) due = std::min(due, source.due);
    std::unique_lock<std::mutex> lock(mutex_);
    due = std::min(due, fabric_.next_due());
    const uint64_t now = NowNs();
    std::unique_lock<std::mutex> inbox_lock(inbox_mutex_);
    if (!polled && !pending_ && !stop_ && due > now && inbox_.empty()) {
      sleeping_ = true;
      inbox_lock.unlock();
      lock.unlock();
      timespec wait{};
      if (due != UINT64_MAX) {
        wait.tv_sec = static_cast<time_t>((due - now) / 1'000'000'000u);
        wait.tv_nsec = static_cast<long>((due - now) % 1'000'000'000u);
      }
      (void)ppoll(fds.data(), fds.size(), due == UINT64_MAX ? nullptr : &wait, nullptr);
      uint64_t count;
      (void)!read(wake_fd_, &count, sizeof count);
      polled = true;
      lock.lock();
      inbox_lock.lock();
      sleeping_ = false;
    }
    if (stop_) return;
    pending_ = false;
    work_hint_.store(false, std::memory_order_relaxed);
    inbound.swap(inbox_);
    inbox_lock.unlock();
    for (HostPacket& in : inbound) {
      hca::Link& link = fabric_.ca_link(in.index);
      (void)(in.sealed ? link.Transmit(std::move(in.bytes))
                       : link.TransmitUnsealed(std::move(in.bytes)));
    }
    inbound.clear();
    fabric_.AdvanceTo(NowNs());
    fabric_.Pump();
    arrivals.swap(outbox_);
    tasks.swap(tasks_);
    news.swap(link_news_);
    targets.clear();
    taps.clear();
    news_targets.clear();
    for (const HostPacket& arrival : arrivals) {
      targets.push_back(ca_ports_[arrival.index]->inbound);
      taps.push_back(ca_ports_[arrival.index]->tap);
    }
    for (const auto& [index, up] : news) news_targets.push_back(ca_ports_[index]->link_state);
    lock.unlock();
    // Link news first: the flaps came before what this round pumped (a port that came up
    // answers the SMPs that follow).
    for (std::size_t i = 0; i < news.size(); ++i) {
      if (news_targets[i]) (*news_targets[i])(news[i].second);
    }
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
      HostPacket& arrival = arrivals[i];
      if (taps[i]) {
        if (!arrival.sealed) hca::SealPacket(arrival.bytes);  // a tap observes exact packets
        arrival.sealed = true;
        if ((*taps[i])(arrival.bytes)) continue;
      }
      // The inbound link seals an unsealed packet unless it carries it inside the daemon
      // (an in-node cable to the CA does; a tunnel does not).
      if (targets[i])
        (void)(arrival.sealed ? targets[i]->Transmit(std::move(arrival.bytes))
                              : targets[i]->TransmitUnsealed(std::move(arrival.bytes)));
    }
    for (auto& task : tasks) task();
    bool served = false;
    if (source_fds != 0) {
      if (!polled) (void)poll(fds.data() + 1, source_fds, 0);
      served = ServeSources(fds);
    }
    if (!arrivals.empty() || !tasks.empty() || !news.empty() || served) {
      delivered_.fetch_add(arrivals.size(), std::memory_order_relaxed);
      last_work = NowNs();
    }
    arrivals.clear();
    tasks.clear();
    news.clear();
  }
}

}  // namespace softib::fabric
