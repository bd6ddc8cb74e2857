// tshark, a decoder nobody here wrote, reads the IPoIB packets the translation makes from
// hand-written Ethernet frames: a pcap file of LINKTYPE_IPOIB (242), each record the 40-byte
// pseudo-header Wireshark's packet-ipoib expects (first 20 bytes zero: no GRH, then the
// 20-byte destination address) and the packet. tshark must decode IPoIB ARP with hardware
// type 32 and our 20-byte address, and IPv4 and IPv6 ND with the IPoIB option, with no
// malformed packet and no expert warning. Fails (never skips) when tshark is missing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "softib/ipoib/translate.h"
#include "translate_test_util.h"

namespace softib::ipoib {
namespace {

using testing::Frame;
using testing::Hex;

void Put32(std::ofstream& out, uint32_t v) {  // pcap headers are little-endian here
  const char b[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 24)};
  out.write(b, 4);
}

std::vector<std::string> OutputLines(const std::string& command) {
  std::vector<std::string> lines;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return lines;
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe.get()) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      lines.push_back(line);
      line.clear();
    }
  }
  return lines;
}

TEST(TsharkIpoib, DecodesIpoibArpIpv4AndNdWithoutMalformedPackets) {
  ASSERT_EQ(std::system("tshark -v >/dev/null 2>&1"), 0)
      << "tshark is required (scripts/install-deps.sh installs it)";
  char tmpl[] = "/tmp/softib-ipoib-tshark-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;

  const LocalIdentity local = testing::Local();
  NeighbourTable table;
  table.Learn(testing::PeerHw(), testing::kPeerLid);
  const std::vector<std::string> frames = {
      // ARP request for 198.18.0.2.
      "ffffffffffff 020000000001 0806 0001 0800 06 04 0001 020000000001 c6120001 "
      "000000000000 c6120002",
      // UDP 198.18.0.1 → 198.18.0.2 port 7.
      "de7663f6fe2f 020000000001 0800 4500 0020 0001 0000 4011 0000 c6120001 c6120002 "
      "0400 0007 000c 0000 61626364",
      // Neighbour solicitation with our source link-layer address.
      "3333ff000002 020000000001 86dd 6000 0000 0020 3a ff fe800000000000000000000000000001 "
      "ff0200000000000000000001ff000002 87 00 7a97 00000000 fe800000000000000000000000000002 "
      "01 01 020000000001",
  };
  const std::string capture = dir + "/ipoib.pcap";
  {
    std::ofstream out(capture, std::ios::binary);
    Put32(out, 0xa1b2c3d4);
    Put32(out, 0x00040002);  // version 2.4
    Put32(out, 0);
    Put32(out, 0);
    Put32(out, 65535);
    Put32(out, 242);  // LINKTYPE_IPOIB
    for (const auto& hex : frames) {
      auto f = Frame(Hex(hex));
      const TxResult r = TranslateFromHost(f.buffer, f.offset, f.length, local, table);
      ASSERT_EQ(r.drop, Drop::kNone) << hex;
      std::vector<uint8_t> record(20, 0);  // no GRH
      std::array<uint8_t, kHwAddrBytes> destination{};
      HwAddr to;
      if (r.multicast) {
        to.qpn = kBroadcastQpn;
        to.gid = r.mgid;
      } else {
        to = r.neighbour->hw;
      }
      EncodeHwAddr(to, destination);
      record.insert(record.end(), destination.begin(), destination.end());
      record.insert(record.end(), f.buffer.begin() + static_cast<ptrdiff_t>(r.offset),
                    f.buffer.begin() + static_cast<ptrdiff_t>(r.offset + r.length));
      Put32(out, 0);
      Put32(out, 0);
      Put32(out, static_cast<uint32_t>(record.size()));
      Put32(out, static_cast<uint32_t>(record.size()));
      out.write(reinterpret_cast<const char*>(record.data()),
                static_cast<std::streamsize>(record.size()));
    }
  }
  const std::string cmd =
      "HOME=" + dir + " tshark -n -r " + capture +
      " -T fields -E separator='|' -E occurrence=a -e frame.protocols -e arp.hw.type"
      " -e arp.hw.size -e arp.src.hw -e arp.src.proto_ipv4 -e ip.dst -e icmpv6.type"
      " -e icmpv6.checksum.status -e _ws.malformed -e _ws.expert.severity 2>" +
      dir + "/tshark.err";
  const auto lines = OutputLines(cmd);
  ASSERT_EQ(lines.size(), 3u) << "see " << dir << "/tshark.err";
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : lines) {
    std::vector<std::string> row;
    size_t start = 0;
    for (size_t bar = line.find('|'); bar != std::string::npos; bar = line.find('|', start)) {
      row.push_back(line.substr(start, bar - start));
      start = bar + 1;
    }
    row.push_back(line.substr(start));
    ASSERT_EQ(row.size(), 10u) << line;
    EXPECT_EQ(row[8], "") << "malformed: " << line;
    EXPECT_EQ(row[9], "") << "expert info: " << line;
    rows.push_back(row);
  }
  EXPECT_EQ(rows[0][0], "ipoib:arp");
  EXPECT_EQ(rows[0][1], "32");
  EXPECT_EQ(rows[0][2], "20");
  EXPECT_EQ(rows[0][3], "00000048fe800000000000000002c90300a1b2c3");
  EXPECT_EQ(rows[0][4], "198.18.0.1");
  EXPECT_EQ(rows[1][0], "ipoib:ip:udp:echo");
  EXPECT_EQ(rows[1][5], "198.18.0.2");
  EXPECT_EQ(rows[2][0], "ipoib:ipv6:icmpv6");
  EXPECT_EQ(rows[2][6], "135");
  EXPECT_EQ(rows[2][7], "1");  // PROTO_CHECKSUM_E_GOOD: tshark verified our ICMPv6 checksum
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace softib::ipoib
