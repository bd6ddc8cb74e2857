// The datagrams of a UDP tunnel between softibd instances (README.md, "UDP tunnels"): a
// 24-byte header of our own, then either the exact IB packet a cable carries (LRH through
// VCRC) or a hello listing the tunnel links the sender hosts. All fields are big-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace softib::fabric::tunnel {

inline constexpr uint32_t kMagic = 0x53494254;  // "SIBT"
inline constexpr uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 24;
inline constexpr std::size_t kHelloEntryBytes = 12;
// Hello entries per datagram: the body stays under a 1500-byte Ethernet MTU.
inline constexpr std::size_t kHelloEntriesPerDatagram = 100;

enum class Type : uint8_t { kPacket = 1, kHello = 2 };

struct Header {
  Type type = Type::kPacket;
  // kPacket: the link (cable) id; kHello: the sender's id (random per daemon start).
  uint64_t id = 0;
  uint32_t sequence = 0;  // per link and direction (kPacket), per sender (kHello)
  uint16_t length = 0;    // bytes after the header
};

// What one end says about a link in its hello.
enum class HelloState : uint8_t {
  kDisabled = 0,  // the link is administratively down at the sender
  kPolling = 1,   // the sender has not heard the peer recently
  kHearYou = 2,   // the sender hears the peer: the link may come up
};

struct HelloEntry {
  uint64_t link_id = 0;
  HelloState state = HelloState::kPolling;
};

enum class DecodeError : uint8_t {
  kNone,
  kShort,      // shorter than the header
  kBadHeader,  // magic, version, type, reserved bytes or length wrong
};

void EncodeHeader(const Header& header, std::span<uint8_t, kHeaderBytes> out);
// Checks the header of `datagram` (its length must equal kHeaderBytes + length).
DecodeError DecodeHeader(std::span<const uint8_t> datagram, Header* out);

// A packet datagram: header + the packet.
std::vector<uint8_t> EncodePacket(uint64_t link_id, uint32_t sequence,
                                  std::span<const uint8_t> packet);
// A hello datagram (at most kHelloEntriesPerDatagram entries).
std::vector<uint8_t> EncodeHello(uint64_t sender, uint32_t sequence,
                                 std::span<const HelloEntry> entries);
// The entries of a hello body; false when the body is not whole entries with a known state
// and zero reserved bytes.
bool DecodeHello(std::span<const uint8_t> body, std::vector<HelloEntry>* out);

// The id both ends of a cable derive without talking: FNV-1a (64 bit) over the two ends as
// (node GUID big-endian, port), the smaller (GUID, port) first; never 0.
uint64_t LinkId(uint64_t guid_a, uint8_t port_a, uint64_t guid_b, uint8_t port_b);

const char* ToString(DecodeError error);

}  // namespace softib::fabric::tunnel
