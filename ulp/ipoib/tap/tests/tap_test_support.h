// What the TAP face tests share: a network namespace of their own (named after the test's
// pid, removed at the end) and frames built by hand.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "softib/ipoib/link_config.h"

namespace softib::ipoib::taptest {

inline bool CanMakeTaps() { return geteuid() == 0 && access("/dev/net/tun", R_OK | W_OK) == 0; }

// A namespace "sibtap-<pid>-<n>" for one test.
class Netns {
 public:
  Netns() {
    static int next = 0;
    name_ = "sibtap-" + std::to_string(getpid()) + "-" + std::to_string(next++);
    std::string error;
    ok_ = link::RunIp({"netns", "add", name_}, &error);
    EXPECT_TRUE(ok_) << error;
  }
  ~Netns() {
    std::string error;
    if (ok_) {
      EXPECT_TRUE(link::RunIp({"netns", "delete", name_}, &error)) << error;
    }
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool ok_ = false;
};

// Frames the face handed on, for the test thread to wait for.
class FrameQueue {
 public:
  void Push(std::span<const uint8_t> frame) {
    std::lock_guard lock(mutex_);
    frames_.emplace_back(frame.begin(), frame.end());
    cv_.notify_all();
  }
  // The first frame `match` accepts (others are discarded), within `ms` ms; empty if none.
  std::vector<uint8_t> WaitFor(const std::function<bool(const std::vector<uint8_t>&)>& match,
                               int ms = 5000) {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      while (!frames_.empty()) {
        std::vector<uint8_t> frame = std::move(frames_.front());
        frames_.pop_front();
        if (match(frame)) return frame;
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && frames_.empty()) return {};
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<uint8_t>> frames_;
};

inline uint16_t Be16(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<uint16_t>(f[at] << 8 | f[at + 1]);
}

// The Internet checksum of `bytes`.
inline uint16_t InetChecksum(const uint8_t* bytes, size_t length) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < length; i += 2)
    sum += static_cast<uint32_t>(bytes[i] << 8 | bytes[i + 1]);
  if (length % 2) sum += static_cast<uint32_t>(bytes[length - 1] << 8);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

using Mac6 = std::array<uint8_t, 6>;
using Ip4 = std::array<uint8_t, 4>;

inline void PutEthernet(std::vector<uint8_t>& f, const Mac6& dst, const Mac6& src, uint16_t type) {
  f.insert(f.end(), dst.begin(), dst.end());
  f.insert(f.end(), src.begin(), src.end());
  f.push_back(static_cast<uint8_t>(type >> 8));
  f.push_back(static_cast<uint8_t>(type));
}

// An Ethernet/IPv4 ARP request: who has `target`? tell `sender_ip` at `sender_mac`.
inline std::vector<uint8_t> ArpRequest(const Mac6& sender_mac, const Ip4& sender_ip,
                                       const Ip4& target) {
  std::vector<uint8_t> f;
  PutEthernet(f, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, sender_mac, 0x0806);
  const uint8_t head[] = {0, 1, 8, 0, 6, 4, 0, 1};  // Ethernet, IPv4, request
  f.insert(f.end(), std::begin(head), std::end(head));
  f.insert(f.end(), sender_mac.begin(), sender_mac.end());
  f.insert(f.end(), sender_ip.begin(), sender_ip.end());
  f.insert(f.end(), 6, 0);
  f.insert(f.end(), target.begin(), target.end());
  return f;
}

// An ICMP echo request of `payload` bytes, IPv4 from `src` to `dst`.
inline std::vector<uint8_t> EchoRequest(const Mac6& dst_mac, const Mac6& src_mac, const Ip4& src,
                                        const Ip4& dst, uint16_t id, uint16_t seq, size_t payload) {
  std::vector<uint8_t> f;
  PutEthernet(f, dst_mac, src_mac, 0x0800);
  const size_t total = 20 + 8 + payload;
  std::vector<uint8_t> ip = {
      0x45, 0, static_cast<uint8_t>(total >> 8), static_cast<uint8_t>(total), 0, 0, 0x40, 0, 64, 1,
      0,    0};
  ip.insert(ip.end(), src.begin(), src.end());
  ip.insert(ip.end(), dst.begin(), dst.end());
  const uint16_t ip_sum = InetChecksum(ip.data(), ip.size());
  ip[10] = static_cast<uint8_t>(ip_sum >> 8);
  ip[11] = static_cast<uint8_t>(ip_sum);
  std::vector<uint8_t> icmp = {8,
                               0,
                               0,
                               0,
                               static_cast<uint8_t>(id >> 8),
                               static_cast<uint8_t>(id),
                               static_cast<uint8_t>(seq >> 8),
                               static_cast<uint8_t>(seq)};
  for (size_t i = 0; i < payload; ++i) icmp.push_back(static_cast<uint8_t>(i));
  const uint16_t icmp_sum = InetChecksum(icmp.data(), icmp.size());
  icmp[2] = static_cast<uint8_t>(icmp_sum >> 8);
  icmp[3] = static_cast<uint8_t>(icmp_sum);
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), icmp.begin(), icmp.end());
  return f;
}

}  // namespace softib::ipoib::taptest
