// The Linux face of an IPoIB interface: a TAP device (/dev/net/tun, IFF_TAP | IFF_NO_PI)
// that implements EthernetFace. Frames the host's stack sends on the interface are read by
// the face's own thread and handed to a FrameHandler (in softibd: the driver's Transmit);
// DeliverToHost writes a frame into the host's stack without blocking (a full queue or a
// down interface: the frame is dropped and counted). The interface lives as long as the
// face: destroying it closes the file and the kernel removes the interface, in whichever
// network namespace it is by then. Needs CAP_NET_ADMIN (root here).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "softib/ipoib/ethernet_face.h"
#include "softib/ipoib/translate.h"

namespace softib::ipoib {

struct TapConfig {
  std::string name;      // "": the kernel picks one (tap%d); at most 15 bytes
  Mac mac{};             // all zero: the kernel's random MAC
  uint32_t mtu = 0;      // 0: the kernel's default (1500); at most kTapMaxMtu
  bool carrier = false;  // the carrier at creation (the driver raises it when it can send)
};

// A TAP's MTU ceiling (tun: 65535 less the Ethernet header).
inline constexpr uint32_t kTapMaxMtu = 65521;

struct TapCounters {
  uint64_t from_host_frames = 0, from_host_bytes = 0;  // read from the TAP, handed on
  uint64_t to_host_frames = 0, to_host_bytes = 0;      // DeliverToHost, written
  uint64_t to_host_dropped = 0;   // DeliverToHost refused: queue full (EAGAIN) or interface down
  uint64_t read_errors = 0;       // a read that failed for another reason than EAGAIN
  uint64_t mtu_errors = 0;        // an MTU the driver asked for that `ip` could not set
  uint64_t stops = 0, wakes = 0;  // StopQueue / WakeQueue: the reader paused and resumed
};

class TapFace final : public EthernetFace {
 public:
  // One frame the host sent (Ethernet II, no FCS), on the face's reader thread. The span
  // is valid during the call only.
  using FrameHandler = std::function<void(std::span<const uint8_t> frame)>;

  // Creates the TAP interface in the caller's network namespace with `config`'s name, MAC,
  // MTU and carrier (the interface stays administratively down: LinkConfig brings it up).
  // nullptr with `error` set ("/dev/net/tun: Operation not permitted (needs root)" ...).
  static std::unique_ptr<TapFace> Create(const TapConfig& config, std::string* error);
  ~TapFace() override;  // Stop(), then the file closes: the interface goes
  TapFace(const TapFace&) = delete;
  TapFace& operator=(const TapFace&) = delete;

  // Sets the MAC and the MTU (0: leave it) — what the driver's interface says, known only
  // once the face exists. In the caller's namespace (before the TAP moves to another).
  bool Configure(const Mac& mac, uint32_t mtu, std::string* error);

  // Starts the reader thread: each frame the host sends goes to `handler`. Once.
  void Start(FrameHandler handler);
  // Stops the reader thread (no handler call after return). Idempotent.
  void Stop();

  // EthernetFace. Any thread; never blocks.
  void DeliverToHost(std::span<const uint8_t> frame) override;
  void SetCarrier(bool up) override;
  // Taken over by the reader thread (an MTU is set from the interface's namespace, with
  // `ip`, which a DPC must not wait for); a failure is retried after SetNamespace.
  void SetMtu(uint32_t mtu) override;
  // Back-pressure: StopQueue pauses the reader thread (it reads no frame after the one being
  // handed, so the host's frames wait in the TAP's queue, whose length is the interface's
  // txqueuelen: the tun driver drops beyond it and counts in `ip -s link` TX dropped);
  // WakeQueue resumes it. Any thread; never block.
  void StopQueue() override;
  void WakeQueue() override;
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }
  // The interface was moved into `netns` ("": the caller's), where SetMtu acts, and is
  // named `name` there now (a TAP is created under a temporary name when it is meant for
  // another namespace, so two namespaces may each have their "ib0"). Called once the
  // interface is where it stays, also when it was not moved: an MTU the driver sets before
  // is applied then (by name in its final namespace), and a carrier raised after it waits.
  void MovedTo(const std::string& netns, const std::string& name);

  // The control thread's view (the reader thread copies it under netns_mutex_).
  const std::string& name() const { return name_; }
  Mac mac() const { return mac_; }
  uint32_t mtu() const { return mtu_.load(std::memory_order_relaxed); }
  bool carrier() const { return carrier_.load(std::memory_order_relaxed); }
  TapCounters counters() const;

 private:
  TapFace() = default;
  void ReadLoop();
  void ApplyPendingMtu();
  void ApplyCarrierLocked(bool up);
  void RaiseDeferredCarrier();

  int fd_ = -1;
  int stop_fd_ = -1;  // eventfd: wakes the reader thread to stop
  std::string name_;
  Mac mac_{};
  std::atomic<uint32_t> mtu_{0};
  std::atomic<uint32_t> pending_mtu_{0};  // SetMtu's, for the reader thread (0: none)
  int mtu_fd_ = -1;                       // eventfd: wakes the reader thread to apply it
  int wake_fd_ = -1;                      // eventfd: wakes the reader thread after WakeQueue
  std::atomic<bool> stopped_{false};      // StopQueue: the reader reads nothing until WakeQueue
  std::mutex netns_mutex_;
  std::string netns_;
  bool settled_ = false;  // MovedTo called: the interface stays where it is
  std::mutex carrier_mutex_;
  bool carrier_deferred_ = false;  // a carrier-up waiting for the pending MTU
  std::atomic<bool> carrier_{false};
  FrameHandler handler_;
  std::thread reader_;
  std::atomic<uint64_t> from_host_frames_{0}, from_host_bytes_{0}, to_host_frames_{0},
      to_host_bytes_{0}, to_host_dropped_{0}, read_errors_{0}, mtu_errors_{0}, stops_{0}, wakes_{0};
};

}  // namespace softib::ipoib
