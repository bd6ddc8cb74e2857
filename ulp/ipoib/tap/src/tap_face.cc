#include "softib/ipoib/tap_face.h"

#include "softib/ipoib/link_config.h"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace softib::ipoib {

namespace {

std::string Errno(const std::string& what) {
  const int e = errno;
  std::string text = what + ": " + std::strerror(e);
  if (e == EPERM || e == EACCES) text += " (needs root: CAP_NET_ADMIN)";
  return text;
}

// An ioctl on the interface by name, through a datagram socket of the caller's namespace.
bool InterfaceIoctl(unsigned long request, ifreq* ifr, std::string* error, const char* what) {
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    *error = Errno("socket");
    return false;
  }
  const bool ok = ioctl(s, request, ifr) == 0;
  if (!ok) *error = Errno(std::string(ifr->ifr_name) + ": " + what);
  close(s);
  return ok;
}

bool AllZero(const Mac& mac) {
  for (uint8_t b : mac) {
    if (b != 0) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<TapFace> TapFace::Create(const TapConfig& config, std::string* error) {
  if (config.name.size() >= IFNAMSIZ) {
    *error = "interface name \"" + config.name + "\" longer than " + std::to_string(IFNAMSIZ - 1) +
             " bytes";
    return nullptr;
  }
  if (config.mtu > kTapMaxMtu || (config.mtu != 0 && config.mtu < 68)) {
    *error = "MTU " + std::to_string(config.mtu) + " out of range (68-" +
             std::to_string(kTapMaxMtu) + ")";
    return nullptr;
  }
  std::unique_ptr<TapFace> face(new TapFace);
  face->fd_ = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (face->fd_ < 0) {
    *error = Errno("/dev/net/tun");
    return nullptr;
  }
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, config.name.c_str(), config.name.size());
  if (ioctl(face->fd_, TUNSETIFF, &ifr) != 0) {
    const bool busy = errno == EBUSY;
    *error = Errno("TUNSETIFF " + (config.name.empty() ? std::string("tap%d") : config.name));
    if (busy) *error += " (an interface of that name exists)";
    return nullptr;
  }
  face->name_.assign(ifr.ifr_name, strnlen(ifr.ifr_name, IFNAMSIZ));
  // The carrier before anything else: the host's stack must not send before the driver can.
  face->SetCarrier(config.carrier);
  if (!face->Configure(config.mac, config.mtu, error)) return nullptr;
  face->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  face->mtu_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  face->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (face->stop_fd_ < 0 || face->mtu_fd_ < 0 || face->wake_fd_ < 0) {
    *error = Errno("eventfd");
    return nullptr;
  }
  return face;
}

bool TapFace::Configure(const Mac& mac, uint32_t mtu, std::string* error) {
  if (mtu > kTapMaxMtu || (mtu != 0 && mtu < 68)) {
    *error = "MTU " + std::to_string(mtu) + " out of range (68-" + std::to_string(kTapMaxMtu) + ")";
    return false;
  }
  if (!AllZero(mac)) {
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, name_.c_str(), name_.size());
    ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
    std::memcpy(ifr.ifr_hwaddr.sa_data, mac.data(), mac.size());
    if (!InterfaceIoctl(SIOCSIFHWADDR, &ifr, error, "set MAC")) return false;
  }
  if (mtu != 0) {
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, name_.c_str(), name_.size());
    ifr.ifr_mtu = static_cast<int>(mtu);
    if (!InterfaceIoctl(SIOCSIFMTU, &ifr, error, "set MTU")) return false;
  }
  // What the interface has now (the kernel's MAC and MTU where these left them).
  ifreq now{};
  std::memcpy(now.ifr_name, name_.c_str(), name_.size());
  if (!InterfaceIoctl(SIOCGIFHWADDR, &now, error, "get MAC")) return false;
  std::memcpy(mac_.data(), now.ifr_hwaddr.sa_data, mac_.size());
  if (!InterfaceIoctl(SIOCGIFMTU, &now, error, "get MTU")) return false;
  mtu_.store(static_cast<uint32_t>(now.ifr_mtu), std::memory_order_relaxed);
  return true;
}

TapFace::~TapFace() {
  Stop();
  if (fd_ >= 0) close(fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  if (mtu_fd_ >= 0) close(mtu_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void TapFace::Start(FrameHandler handler) {
  if (reader_.joinable()) return;
  handler_ = std::move(handler);
  reader_ = std::thread([this] { ReadLoop(); });
}

void TapFace::Stop() {
  if (!reader_.joinable()) return;
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
  reader_.join();
  uint64_t drained;
  (void)!read(stop_fd_, &drained, sizeof drained);
}

void TapFace::ReadLoop() {
  // A TAP frame is at most the MTU plus the Ethernet header (and a VLAN tag).
  std::vector<uint8_t> buffer(kTapMaxMtu + 32);
  for (;;) {
    // Stopped (StopQueue): the TAP is not polled for frames; WakeQueue's eventfd wakes us.
    const bool stopped = stopped_.load(std::memory_order_acquire);
    pollfd fds[4] = {{fd_, static_cast<short>(stopped ? 0 : POLLIN), 0},
                     {stop_fd_, POLLIN, 0},
                     {mtu_fd_, POLLIN, 0},
                     {wake_fd_, POLLIN, 0}};
    if (poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      read_errors_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[2].revents != 0) ApplyPendingMtu();
    if (fds[3].revents != 0) {
      uint64_t drained;
      (void)!read(wake_fd_, &drained, sizeof drained);
    }
    if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
      read_errors_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Everything queued now, then poll again (the stop request is seen between batches);
    // a StopQueue from the handler ends the batch at once.
    for (int i = 0; i < 64 && !stopped_.load(std::memory_order_acquire); ++i) {
      const ssize_t n = read(fd_, buffer.data(), buffer.size());
      if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) read_errors_.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      from_host_frames_.fetch_add(1, std::memory_order_relaxed);
      from_host_bytes_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      if (handler_) handler_(std::span<const uint8_t>(buffer.data(), static_cast<size_t>(n)));
    }
  }
}

void TapFace::DeliverToHost(std::span<const uint8_t> frame) {
  ssize_t n;
  do {
    n = write(fd_, frame.data(), frame.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(frame.size())) {
    // EAGAIN (the host's backlog is full), EIO (the interface is down): dropped.
    to_host_dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  to_host_frames_.fetch_add(1, std::memory_order_relaxed);
  to_host_bytes_.fetch_add(frame.size(), std::memory_order_relaxed);
}

void TapFace::StopQueue() {
  if (!stopped_.exchange(true, std::memory_order_acq_rel))
    stops_.fetch_add(1, std::memory_order_relaxed);
}

void TapFace::WakeQueue() {
  if (!stopped_.exchange(false, std::memory_order_acq_rel)) return;
  wakes_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void TapFace::SetMtu(uint32_t mtu) {
  if (mtu < 68 || mtu > kTapMaxMtu) return;
  pending_mtu_.store(mtu, std::memory_order_relaxed);
  const uint64_t one = 1;
  (void)!write(mtu_fd_, &one, sizeof one);
}

void TapFace::MovedTo(const std::string& netns, const std::string& name) {
  {
    std::lock_guard guard(netns_mutex_);
    netns_ = netns;
    name_ = name;
    settled_ = true;
  }
  const uint64_t one = 1;
  (void)!write(mtu_fd_, &one, sizeof one);  // an MTU that failed meanwhile goes again
}

void TapFace::ApplyPendingMtu() {
  uint64_t drained;
  (void)!read(mtu_fd_, &drained, sizeof drained);
  const uint32_t mtu = pending_mtu_.load(std::memory_order_relaxed);
  if (mtu == 0 || mtu == mtu_.load(std::memory_order_relaxed)) {
    RaiseDeferredCarrier();
    return;
  }
  std::string netns, name;
  bool settled;
  {
    std::lock_guard guard(netns_mutex_);
    netns = netns_;
    name = name_;
    settled = settled_;
  }
  // Until MovedTo the interface's name and namespace are the control thread's to change
  // (a temporary name in softibd's namespace may be another daemon's a moment later): the
  // MTU waits for MovedTo, and so does a carrier deferred behind it.
  if (!settled) return;
  std::string error;
  if (link::SetMtu(name, netns, mtu, &error)) {
    mtu_.store(mtu, std::memory_order_relaxed);
  } else {
    mtu_errors_.fetch_add(1, std::memory_order_relaxed);  // final: the carrier goes up anyway
  }
  RaiseDeferredCarrier();
}

void TapFace::SetCarrier(bool up) {
  std::lock_guard guard(carrier_mutex_);
  const uint32_t pending = pending_mtu_.load(std::memory_order_relaxed);
  if (up && pending != 0 && pending != mtu_.load(std::memory_order_relaxed)) {
    // The MTU the driver told first is not set yet (the reader thread sets it): the host's
    // stack must not send with the old one, so the carrier follows the MTU there.
    carrier_deferred_ = true;
    const uint64_t one = 1;
    (void)!write(mtu_fd_, &one, sizeof one);
    return;
  }
  carrier_deferred_ = false;
  ApplyCarrierLocked(up);
}

void TapFace::ApplyCarrierLocked(bool up) {
  // TUNSETCARRIER (Linux 5.0) sets the TAP's carrier whatever namespace it is in.
  int carrier = up ? 1 : 0;
  if (ioctl(fd_, TUNSETCARRIER, &carrier) == 0) carrier_.store(up, std::memory_order_relaxed);
}

void TapFace::RaiseDeferredCarrier() {
  std::lock_guard guard(carrier_mutex_);
  if (!carrier_deferred_) return;
  carrier_deferred_ = false;
  ApplyCarrierLocked(true);
}

TapCounters TapFace::counters() const {
  TapCounters c;
  c.from_host_frames = from_host_frames_.load(std::memory_order_relaxed);
  c.from_host_bytes = from_host_bytes_.load(std::memory_order_relaxed);
  c.to_host_frames = to_host_frames_.load(std::memory_order_relaxed);
  c.to_host_bytes = to_host_bytes_.load(std::memory_order_relaxed);
  c.to_host_dropped = to_host_dropped_.load(std::memory_order_relaxed);
  c.read_errors = read_errors_.load(std::memory_order_relaxed);
  c.mtu_errors = mtu_errors_.load(std::memory_order_relaxed);
  c.stops = stops_.load(std::memory_order_relaxed);
  c.wakes = wakes_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace softib::ipoib
