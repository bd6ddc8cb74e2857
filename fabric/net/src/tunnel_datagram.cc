#include "softib/fabric/tunnel_datagram.h"

#include <algorithm>
#include <utility>

namespace softib::fabric::tunnel {

namespace {

void Put(uint8_t* p, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(value >> (8 * (bytes - 1 - i)));
}

uint64_t Get(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = value << 8 | p[i];
  return value;
}

std::vector<uint8_t> WithHeader(Type type, uint64_t id, uint32_t sequence, std::size_t body) {
  std::vector<uint8_t> out(kHeaderBytes + body);
  EncodeHeader({type, id, sequence, static_cast<uint16_t>(body)},
               std::span<uint8_t, kHeaderBytes>(out.data(), kHeaderBytes));
  return out;
}

}  // namespace

void EncodeHeader(const Header& header, std::span<uint8_t, kHeaderBytes> out) {
  std::fill(out.begin(), out.end(), 0);
  Put(&out[0], kMagic, 4);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(header.type);
  // 6..7 reserved
  Put(&out[8], header.id, 8);
  Put(&out[16], header.sequence, 4);
  Put(&out[20], header.length, 2);
  // 22..23 reserved
}

DecodeError DecodeHeader(std::span<const uint8_t> datagram, Header* out) {
  if (datagram.size() < kHeaderBytes) return DecodeError::kShort;
  const uint8_t* p = datagram.data();
  const auto type = static_cast<Type>(p[5]);
  if (Get(p, 4) != kMagic || p[4] != kVersion || (type != Type::kPacket && type != Type::kHello) ||
      p[6] != 0 || p[7] != 0 || p[22] != 0 || p[23] != 0)
    return DecodeError::kBadHeader;
  out->type = type;
  out->id = Get(p + 8, 8);
  out->sequence = static_cast<uint32_t>(Get(p + 16, 4));
  out->length = static_cast<uint16_t>(Get(p + 20, 2));
  if (datagram.size() != kHeaderBytes + out->length) return DecodeError::kBadHeader;
  return DecodeError::kNone;
}

std::vector<uint8_t> EncodePacket(uint64_t link_id, uint32_t sequence,
                                  std::span<const uint8_t> packet) {
  std::vector<uint8_t> out = WithHeader(Type::kPacket, link_id, sequence, packet.size());
  std::copy(packet.begin(), packet.end(), out.begin() + kHeaderBytes);
  return out;
}

std::vector<uint8_t> EncodeHello(uint64_t sender, uint32_t sequence,
                                 std::span<const HelloEntry> entries) {
  std::vector<uint8_t> out =
      WithHeader(Type::kHello, sender, sequence, entries.size() * kHelloEntryBytes);
  uint8_t* p = out.data() + kHeaderBytes;
  for (const HelloEntry& e : entries) {
    Put(p, e.link_id, 8);
    p[8] = static_cast<uint8_t>(e.state);  // 9..11 reserved (zero)
    p += kHelloEntryBytes;
  }
  return out;
}

bool DecodeHello(std::span<const uint8_t> body, std::vector<HelloEntry>* out) {
  out->clear();
  if (body.size() % kHelloEntryBytes != 0) return false;
  for (std::size_t at = 0; at < body.size(); at += kHelloEntryBytes) {
    const uint8_t* p = body.data() + at;
    if (p[8] > static_cast<uint8_t>(HelloState::kHearYou) || p[9] != 0 || p[10] != 0 || p[11] != 0)
      return false;
    out->push_back({Get(p, 8), static_cast<HelloState>(p[8])});
  }
  return true;
}

uint64_t LinkId(uint64_t guid_a, uint8_t port_a, uint64_t guid_b, uint8_t port_b) {
  if (std::pair(guid_b, port_b) < std::pair(guid_a, port_a)) {
    std::swap(guid_a, guid_b);
    std::swap(port_a, port_b);
  }
  uint8_t bytes[18];
  Put(bytes, guid_a, 8);
  bytes[8] = port_a;
  Put(bytes + 9, guid_b, 8);
  bytes[17] = port_b;
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a offset basis and prime (64 bit)
  for (uint8_t b : bytes) hash = (hash ^ b) * 0x100000001b3ull;
  return hash != 0 ? hash : 1;
}

const char* ToString(DecodeError error) {
  switch (error) {
    case DecodeError::kNone:
      return "ok";
    case DecodeError::kShort:
      return "short";
    case DecodeError::kBadHeader:
      return "bad header";
  }
  return "?";
}

}  // namespace softib::fabric::tunnel
