// Shared by the translation's tests: hex text → bytes, and the two ends of the link the
// hand-written frames use (198.18.0.1 is "local", 198.18.0.2 the peer).
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "softib/ipoib/translate.h"

namespace softib::ipoib::testing {

// "ff ff 0a|0b" → bytes; spaces, '|' and newlines separate nothing.
inline std::vector<uint8_t> Hex(std::string_view text) {
  std::vector<uint8_t> out;
  int high = -1;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) continue;
    const int v =
        std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<uint8_t>(high << 4 | v));
      high = -1;
    }
  }
  return out;
}

inline Gid GidOf(std::string_view hex) {
  Gid gid{};
  const auto bytes = Hex(hex);
  for (size_t i = 0; i < gid.size() && i < bytes.size(); ++i) gid[i] = bytes[i];
  return gid;
}

// Local: QPN 0x48, GID fe80::2:c903:a1:b2c3, MAC 02:00:00:00:00:01, default P_Key, MTU 2044.
inline LocalIdentity Local() {
  LocalIdentity local;
  local.hw.qpn = 0x48;
  local.hw.gid = GidOf("fe80 0000 0000 0000 0002 c903 00a1 b2c3");
  local.mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  local.pkey = 0xFFFF;
  local.mcast_scope = 2;
  local.mtu = 2044;
  return local;
}

// The peer: QPN 0x51, GID fe80::2:c903:d4:e5f6, LID 7. Its derived MAC (FNV-1a of its
// interface ID and QPN, worked out by hand from the algorithm) is de:76:63:f6:fe:2f.
inline HwAddr PeerHw() {
  HwAddr hw;
  hw.qpn = 0x51;
  hw.gid = GidOf("fe80 0000 0000 0000 0002 c903 00d4 e5f6");
  return hw;
}
inline constexpr uint16_t kPeerLid = 7;
inline const Mac kPeerMac = {0xde, 0x76, 0x63, 0xf6, 0xfe, 0x2f};

// The peer's view of the same link: its identity, with "local" as its neighbour.
inline LocalIdentity PeerIdentity() {
  LocalIdentity peer = Local();
  peer.hw = PeerHw();
  peer.mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  return peer;
}

// A buffer with `head` bytes of headroom, the bytes, and kTxTailroom after them.
struct Framed {
  std::vector<uint8_t> buffer;
  size_t offset = 0;
  size_t length = 0;
  std::vector<uint8_t> Out(size_t at, size_t len) const {
    return {buffer.begin() + static_cast<ptrdiff_t>(at),
            buffer.begin() + static_cast<ptrdiff_t>(at + len)};
  }
};
inline Framed Frame(const std::vector<uint8_t>& bytes, size_t head = 64) {
  Framed f;
  f.buffer.assign(head, 0xEE);
  f.buffer.insert(f.buffer.end(), bytes.begin(), bytes.end());
  f.buffer.resize(f.buffer.size() + kTxTailroom, 0xEE);
  f.offset = head;
  f.length = bytes.size();
  return f;
}

}  // namespace softib::ipoib::testing
