// A Fabric driven by its own thread on the real clock, for softibd. CA ports transmit from
// any thread (the packet is queued under the host's lock and the thread woken); the thread
// pumps the fabric and hands what arrives for each CA port to that port's inbound link
// (hca/driver's receive side, which queues onto the node's delivery DPC) outside the lock,
// so a CA answering at once (an ACK) never finds the lock held by its own delivery.
// Sources (a UDP tunnel's socket) and posted tasks (control requests) run on the same
// thread, which sleeps in poll() on their descriptors and an eventfd that wakes it.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "softib/fabric/fabric.h"

namespace softib::fabric {

class FabricHost {
 public:
  explicit FabricHost(uint32_t seed = 1);
  ~FabricHost();  // Stop()
  FabricHost(const FabricHost&) = delete;
  FabricHost& operator=(const FabricHost&) = delete;

  // Runs `f(fabric)` under the host's lock: set-up, faults, flaps, counters. The thread then
  // looks again at what is due (a flap raises a switch trap that must go out).
  template <typename F>
  auto With(F&& f) {
    struct Rewake {
      FabricHost* host;
      ~Rewake() {  // runs with the lock still held
        host->pending_ = true;
        if (host->sleeping_) host->Kick();
      }
    };
    std::lock_guard<std::mutex> lock(mutex_);
    Rewake rewake{this};
    return f(fabric_);
  }

  // A CA port in the fabric. It transmits into ca_link(index) (safe from any thread);
  // SetInbound names where its arrivals go (until then they are dropped).
  uint32_t AddCaPort();
  hca::Link& ca_link(uint32_t index);
  // The fabric's index of CA port `index`; fabric_port_locked from inside With().
  uint32_t fabric_port(uint32_t index) const;
  uint32_t fabric_port_locked(uint32_t index) const { return ca_ports_.at(index)->fabric_index; }
  void SetInbound(uint32_t index, std::shared_ptr<hca::Link> inbound);
  // Sees each packet for CA port `index` before its inbound link (on the host's thread,
  // outside the lock); returning true keeps it from the port (an ibsim client took it).
  using Tap = std::function<bool(std::span<const uint8_t> packet)>;
  void SetTap(uint32_t index, Tap tap);
  // From now on CA port `index` hears its cable go down and come up (a flap, a tunnel's
  // hellos), in order, on the host's thread outside the lock: it may call into the HCA
  // behind the port (which may transmit), not With. ca_port_up is the state until then.
  using LinkState = std::function<void(bool up)>;
  void SetLinkState(uint32_t index, LinkState link_state);
  bool ca_port_up(uint32_t index) const;

  // Something else the thread serves (a UDP tunnel's socket): `service(now_ns)` runs on the
  // thread, outside the lock (it may call With and ca_link), when `fd` is readable or the
  // time it returned last (UINT64_MAX: none; first call at once) has come. Before Start.
  using Service = std::function<uint64_t(uint64_t now_ns)>;
  void AddSource(int fd, Service service);
  // Runs `task` on the thread, outside the lock (it may call With); from any thread. Tasks
  // posted after Stop never run.
  void Post(std::function<void()> task);
  // The thread's clock (steady, nanoseconds).
  static uint64_t Now();

  void Start();
  void Stop();
  uint64_t delivered() const { return delivered_.load(std::memory_order_relaxed); }

 private:
  class HostLink;
  struct CaPort {
    uint32_t fabric_index = 0;
    std::shared_ptr<hca::Link> inbound;
    std::shared_ptr<Tap> tap;
    std::shared_ptr<LinkState> link_state;
    std::unique_ptr<HostLink> out;
  };
  struct Source {
    int fd;
    Service service;
    uint64_t due = 0;
  };
  void Run();
  void Wake();  // marks work pending and wakes the thread if it sleeps
  void Kick();  // wakes the sleeping thread (the eventfd)
  // Serves the sources whose descriptor is readable (revents from the last poll) or whose
  // time has come; true when any ran.
  bool ServeSources(std::vector<pollfd>& fds);

  // A packet from or for CA port `index`; `sealed` false: CRC offload (hca/device/packet.h).
  struct HostPacket {
    uint32_t index;
    std::vector<uint8_t> bytes;
    bool sealed;
  };

  mutable std::mutex mutex_;
  Fabric fabric_;
  std::vector<std::unique_ptr<CaPort>> ca_ports_;  // lock held
  std::vector<HostPacket> outbox_;                 // lock held
  std::vector<std::function<void()>> tasks_;       // lock held
  // What the fabric said about CA ports' cables (index, up), for their LinkState.
  std::vector<std::pair<uint32_t, bool>> link_news_;  // lock held
  bool pending_ = false;                              // lock held
  bool stop_ = false;                                 // lock held
  // What the CA ports transmitted, fed into the fabric at the thread's next round: under a
  // lock of its own, which the thread does not hold while it pumps, so a sender (the SM's
  // window) is not held up by the packets already crossing. Lock order: mutex_, inbox_mutex_.
  std::mutex inbox_mutex_;
  std::vector<HostPacket> inbox_;  // inbox_mutex_
  bool sleeping_ = false;          // inbox_mutex_: the thread is (about to be) in poll()
  int wake_fd_ = -1;               // eventfd: Wake() kicks the sleeping thread
  std::vector<Source> sources_;    // set before Start, then the thread's
  std::atomic<bool> work_hint_{false};
  std::atomic<uint64_t> delivered_{0};
  std::thread thread_;
};

}  // namespace softib::fabric
