#include "softib/wire/capture_file.h"
#include "softib/wire/hex.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace softib::capture {
namespace {

TEST(Erf, RecordHeaderLayout) {
  const std::vector<uint8_t> pkt = {1, 2, 3, 4, 5};
  const auto rec = EncodeErfRecord(pkt, 0x0102030405060708ull);
  ASSERT_EQ(rec.size(), 21u);
  const std::vector<uint8_t> header = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // ts LE
                                       21,   0x04,                        // type, flags
                                       0x00, 21,   0x00, 0x00, 0x00, 5};  // rlen lctr wlen
  EXPECT_EQ(std::vector<uint8_t>(rec.begin(), rec.begin() + 16), header);
  EXPECT_EQ(std::vector<uint8_t>(rec.begin() + 16, rec.end()), pkt);
}

// ERF time is 32.32 fixed point: whole seconds high, the binary fraction low.
TEST(Erf, TimestampOfUnixNanoseconds) {
  EXPECT_EQ(ErfTimestamp(0), 0u);
  EXPECT_EQ(ErfTimestamp(1'500'000'000), (1ull << 32) | 0x80000000u);  // 1.5 s
  EXPECT_EQ(ErfTimestamp(1'764'000'000'250'000'000), (1'764'000'000ull << 32) | 0x40000000u);
  // 1 ns is 4.29 units of the fraction: consecutive nanoseconds stay distinct.
  EXPECT_EQ(ErfTimestamp(1), 4u);
  EXPECT_EQ(ErfTimestamp(2), 8u);
}

TEST(Erf, ClockIsTheTimeOfDayAndStrictlyIncreasing) {
  timespec before{};
  clock_gettime(CLOCK_REALTIME, &before);
  ErfClock clock;
  uint64_t last = 0;
  for (int i = 0; i < 1000; ++i) {  // faster than the clock ticks: stamps must still differ
    const uint64_t t = clock.Next();
    EXPECT_GT(t, last) << i;
    last = t;
  }
  timespec after{};
  clock_gettime(CLOCK_REALTIME, &after);
  EXPECT_GE(last >> 32, static_cast<uint64_t>(before.tv_sec));
  EXPECT_LE(last >> 32, static_cast<uint64_t>(after.tv_sec) + 1);
}

TEST(Erf, WriteReadRoundTrip) {
  char tmpl[] = "/tmp/softib-erf-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/t.erf";
  std::vector<CapturedPacket> packets(3);
  for (int i = 0; i < 3; ++i) {
    packets[i].timestamp = static_cast<uint64_t>(i + 1) << 32;
    packets[i].bytes.assign(static_cast<std::size_t>(10 + i), static_cast<uint8_t>(i));
  }
  ASSERT_EQ(WriteErfFile(path, packets), "");
  std::vector<uint8_t> data;
  ASSERT_EQ(ReadFile(path, &data), "");
  std::vector<CapturedPacket> back;
  ASSERT_EQ(ParseErf(data, &back), "");
  ASSERT_EQ(back.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].timestamp, packets[i].timestamp);
    EXPECT_EQ(back[i].erf_type, kErfTypeInfiniband);
    EXPECT_EQ(back[i].bytes, packets[i].bytes);
  }
  std::filesystem::remove_all(tmpl);
}

TEST(Erf, SkipsExtensionHeadersAndPadding) {
  std::vector<uint8_t> rec = {0, 0, 0, 0, 0, 0, 0, 0, 21 | 0x80, 0x04, 0, 40, 0, 0, 0, 3};
  const uint8_t ext1[8] = {0x80 | 0x01, 1, 2, 3, 4, 5, 6, 7};  // another follows
  const uint8_t ext2[8] = {0x01, 1, 2, 3, 4, 5, 6, 7};
  rec.insert(rec.end(), ext1, ext1 + 8);
  rec.insert(rec.end(), ext2, ext2 + 8);
  rec.insert(rec.end(), {0xAA, 0xBB, 0xCC, 0, 0, 0, 0, 0});  // 3 bytes + padding to rlen 40
  std::vector<CapturedPacket> out;
  ASSERT_EQ(ParseErf(rec, &out), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, (std::vector<uint8_t>{0xAA, 0xBB, 0xCC}));
}

TEST(Erf, Truncated) {
  std::vector<CapturedPacket> out;
  const std::vector<uint8_t> short_header = {0, 0, 0, 0, 0, 0, 0, 0, 21, 4};
  EXPECT_NE(ParseErf(short_header, &out), "");
  const std::vector<uint8_t> long_rlen = {0, 0, 0, 0, 0, 0, 0, 0, 21, 4, 0, 99, 0, 0, 0, 1, 7};
  EXPECT_NE(ParseErf(long_rlen, &out).find("bad ERF record length 99"), std::string::npos);
}

std::vector<uint8_t> PcapFile(bool big_endian, uint32_t link_type,
                              const std::vector<uint8_t>& pkt) {
  std::vector<uint8_t> f;
  auto put32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i)
      f.push_back(static_cast<uint8_t>(v >> (big_endian ? 24 - 8 * i : 8 * i)));
  };
  auto put16 = [&](uint16_t v) {
    f.push_back(static_cast<uint8_t>(big_endian ? v >> 8 : v));
    f.push_back(static_cast<uint8_t>(big_endian ? v : v >> 8));
  };
  put32(0xA1B2C3D4u);
  put16(2);
  put16(4);
  put32(0);
  put32(0);
  put32(65535);
  put32(link_type);
  put32(7);       // seconds
  put32(500000);  // microseconds
  put32(static_cast<uint32_t>(pkt.size()));
  put32(static_cast<uint32_t>(pkt.size()));
  f.insert(f.end(), pkt.begin(), pkt.end());
  return f;
}

TEST(Pcap, InfinibandLinkTypeBothByteOrders) {
  const std::vector<uint8_t> pkt = {0xF0, 0x02, 0xFF, 0xFF, 0x00, 0x05, 0x00, 0x01};
  for (bool be : {false, true}) {
    std::vector<CapturedPacket> out;
    ASSERT_EQ(ParsePcap(PcapFile(be, 247, pkt), &out), "");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].bytes, pkt);
    EXPECT_EQ(out[0].timestamp, (7ull << 32) | 0x80000000ull);
  }
}

TEST(Pcap, ErfLinkType) {
  const std::vector<uint8_t> pkt = {9, 8, 7};
  std::vector<CapturedPacket> out;
  ASSERT_EQ(ParsePcap(PcapFile(false, 197, EncodeErfRecord(pkt, 0)), &out), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].bytes, pkt);
}

TEST(Pcap, Rejects) {
  std::vector<CapturedPacket> out;
  EXPECT_EQ(ParsePcap(std::vector<uint8_t>(10), &out),
            "not a pcap file (shorter than its 24-byte header)");
  EXPECT_EQ(ParsePcap(std::vector<uint8_t>(24), &out), "not a pcap file (bad magic number)");
  EXPECT_EQ(ParsePcap(PcapFile(false, 1, {1}), &out),
            "pcap link type 1 is not InfiniBand (247) or ERF (197)");
}

TEST(Hex, ParseAndFormat) {
  std::vector<uint8_t> b;
  ASSERT_EQ(hex::Parse("0x01 81:0a-Ff", &b), "");
  EXPECT_EQ(b, (std::vector<uint8_t>{0x01, 0x81, 0x0A, 0xFF}));
  EXPECT_EQ(hex::Format(b), "01810aff");
  EXPECT_EQ(hex::Parse("01 8", &b), "odd number of hex digits");
  EXPECT_EQ(hex::Parse("01 zz", &b), "bad hex character 'z' at position 3");
  EXPECT_EQ(hex::Parse("0 1", &b), "hex digit missing after '0' at position 0");
  EXPECT_EQ(hex::Dump(std::vector<uint8_t>{1, 2}), "0000: 01 02\n");
}

}  // namespace
}  // namespace softib::capture
