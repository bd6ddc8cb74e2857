#include "softib/wire/capture_file.h"

#include <time.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace softib::capture {
namespace {

constexpr std::size_t kErfHeaderBytes = 16;
constexpr std::size_t kErfExtensionBytes = 8;
constexpr uint8_t kErfFlagVaryingLength = 0x04;
constexpr uint8_t kErfTypeExtensionBit = 0x80;

uint16_t LoadBe16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

uint32_t Load32(const uint8_t* p, bool big_endian) {
  if (big_endian)
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
           static_cast<uint32_t>(p[2]) << 8 | p[3];
  return static_cast<uint32_t>(p[3]) << 24 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[1]) << 8 | p[0];
}

void PushBe16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

}  // namespace

uint64_t ErfTimestamp(uint64_t unix_ns) {
  // Seconds in the high 32 bits, the binary fraction of a second in the low 32.
  const uint64_t seconds = unix_ns / 1'000'000'000u;
  const uint64_t fraction = ((unix_ns % 1'000'000'000u) << 32) / 1'000'000'000u;
  return seconds << 32 | fraction;
}

uint64_t ErfClock::Next() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t ns =
      static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
  // One nanosecond is 4.3 units of the 32-bit fraction: distinct nanoseconds stay distinct.
  if (ns <= last_ns_) ns = last_ns_ + 1;
  last_ns_ = ns;
  return ErfTimestamp(ns);
}

std::vector<uint8_t> EncodeErfRecord(std::span<const uint8_t> packet, uint64_t timestamp) {
  std::vector<uint8_t> rec;
  rec.reserve(kErfHeaderBytes + packet.size());
  for (int i = 0; i < 8; ++i) rec.push_back(static_cast<uint8_t>(timestamp >> (8 * i)));
  rec.push_back(kErfTypeInfiniband);
  rec.push_back(kErfFlagVaryingLength);
  PushBe16(rec, static_cast<uint16_t>(kErfHeaderBytes + packet.size()));
  PushBe16(rec, 0);  // lctr
  PushBe16(rec, static_cast<uint16_t>(packet.size()));
  rec.insert(rec.end(), packet.begin(), packet.end());
  return rec;
}

std::string WriteErfFile(const std::string& path, std::span<const CapturedPacket> packets) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return "cannot create " + path + ": " + std::strerror(errno);
  for (const auto& p : packets) {
    if (p.bytes.size() > 0xFFFF - kErfHeaderBytes) return "packet too long for an ERF record";
    const auto rec = EncodeErfRecord(p.bytes, p.timestamp);
    out.write(reinterpret_cast<const char*>(rec.data()), static_cast<std::streamsize>(rec.size()));
  }
  out.close();
  if (!out) return "cannot write " + path;
  return "";
}

std::string ParseErf(std::span<const uint8_t> data, std::vector<CapturedPacket>* out) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < kErfHeaderBytes)
      return "truncated ERF record header at offset " + std::to_string(pos);
    const uint8_t* h = &data[pos];
    const std::size_t rlen = LoadBe16(h + 10);
    const std::size_t wlen = LoadBe16(h + 14);
    if (rlen < kErfHeaderBytes || rlen > data.size() - pos)
      return "bad ERF record length " + std::to_string(rlen) + " at offset " + std::to_string(pos);
    CapturedPacket p;
    for (int i = 7; i >= 0; --i) p.timestamp = p.timestamp << 8 | h[i];
    p.erf_type = h[8] & 0x7F;
    std::size_t body = kErfHeaderBytes;
    bool more = (h[8] & kErfTypeExtensionBit) != 0;
    while (more) {
      if (body + kErfExtensionBytes > rlen) return "truncated ERF extension header";
      more = (h[body] & 0x80) != 0;
      body += kErfExtensionBytes;
    }
    // The captured bytes end at rlen (records may be padded); wlen bounds them.
    std::size_t len = rlen - body;
    if (wlen < len) len = wlen;
    p.bytes.assign(h + body, h + body + len);
    out->push_back(std::move(p));
    pos += rlen;
  }
  return "";
}

std::string ParsePcap(std::span<const uint8_t> data, std::vector<CapturedPacket>* out) {
  if (data.size() < 24) return "not a pcap file (shorter than its 24-byte header)";
  const uint32_t magic_be = Load32(data.data(), true);
  bool big_endian = false;
  bool nanoseconds = false;
  if (magic_be == 0xA1B2C3D4u || magic_be == 0xA1B23C4Du) {
    big_endian = true;
    nanoseconds = magic_be == 0xA1B23C4Du;
  } else if (magic_be == 0xD4C3B2A1u || magic_be == 0x4D3CB2A1u) {
    nanoseconds = magic_be == 0x4D3CB2A1u;
  } else {
    return "not a pcap file (bad magic number)";
  }
  const uint32_t link_type = Load32(&data[20], big_endian) & 0x0FFFFFFFu;
  if (link_type != kPcapLinkTypeInfiniband && link_type != kPcapLinkTypeErf)
    return "pcap link type " + std::to_string(link_type) + " is not InfiniBand (247) or ERF (197)";
  std::size_t pos = 24;
  while (pos < data.size()) {
    if (data.size() - pos < 16) return "truncated pcap record header";
    const uint32_t sec = Load32(&data[pos], big_endian);
    const uint32_t frac = Load32(&data[pos + 4], big_endian);
    const uint32_t incl = Load32(&data[pos + 8], big_endian);
    pos += 16;
    if (incl > data.size() - pos) return "truncated pcap record";
    const auto body = data.subspan(pos, incl);
    pos += incl;
    if (link_type == kPcapLinkTypeErf) {
      if (std::string err = ParseErf(body, out); !err.empty()) return err;
      continue;
    }
    CapturedPacket p;
    const uint64_t units = nanoseconds ? 1000000000ull : 1000000ull;
    p.timestamp = static_cast<uint64_t>(sec) << 32 | ((static_cast<uint64_t>(frac) << 32) / units);
    p.bytes.assign(body.begin(), body.end());
    out->push_back(std::move(p));
  }
  return "";
}

std::string ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open " + path + ": " + std::strerror(errno);
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return "cannot read " + path;
  return "";
}

}  // namespace softib::capture
