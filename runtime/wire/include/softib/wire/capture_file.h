// Capture files that Wireshark/tshark open, holding raw InfiniBand packets
// (LRH through VCRC).
//
// ERF (Endace Extensible Record Format), one record per packet:
//   bytes 0-7   timestamp, 32.32 fixed-point seconds, little-endian
//   byte  8     type (21 = InfiniBand; bit 7: extension headers follow)
//   byte  9     flags (bit 2: varying-length record)
//   bytes 10-11 rlen, record length including this header, big-endian
//   bytes 12-13 lctr, loss counter, big-endian
//   bytes 14-15 wlen, wire length of the packet, big-endian
//   then 8-byte extension headers while their bit 7 says another follows,
//   then the packet.
// pcap (libpcap classic) with link type 247 (LINKTYPE_INFINIBAND) or 197
// (LINKTYPE_ERF, each packet an ERF record).
//
// Captures carry wall-clock time (ErfClock): seconds since the Unix epoch, as Wireshark
// shows them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace softib::capture {

inline constexpr uint8_t kErfTypeInfiniband = 21;
inline constexpr uint32_t kPcapLinkTypeInfiniband = 247;
inline constexpr uint32_t kPcapLinkTypeErf = 197;

struct CapturedPacket {
  uint64_t timestamp = 0;  // ERF 32.32 fixed-point seconds
  uint8_t erf_type = kErfTypeInfiniband;
  std::vector<uint8_t> bytes;
};

// The ERF timestamp of a time given in nanoseconds since the Unix epoch.
uint64_t ErfTimestamp(uint64_t unix_ns);

// Stamps the records of a capture with the wall clock (CLOCK_REALTIME): each Next() is the
// time of day, except that it is strictly later than the one before — packets of one batch,
// delivered at one instant, get distinct timestamps a nanosecond apart, in their order.
class ErfClock {
 public:
  uint64_t Next();

 private:
  uint64_t last_ns_ = 0;
};

// One ERF record for `packet` (type 21, varying-length flag set).
std::vector<uint8_t> EncodeErfRecord(std::span<const uint8_t> packet, uint64_t timestamp);

// Writes the packets as consecutive ERF records. Returns an error message, or "".
std::string WriteErfFile(const std::string& path, std::span<const CapturedPacket> packets);

// Parses ERF records from `data`. Returns an error message, or "" and fills `out`.
std::string ParseErf(std::span<const uint8_t> data, std::vector<CapturedPacket>* out);

// Parses a classic pcap file (either byte order, us or ns timestamps).
std::string ParsePcap(std::span<const uint8_t> data, std::vector<CapturedPacket>* out);

// Reads a whole file. Returns an error message, or "".
std::string ReadFile(const std::string& path, std::vector<uint8_t>* out);

}  // namespace softib::capture
