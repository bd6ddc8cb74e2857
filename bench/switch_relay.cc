// softib_bench_switch: the cost of one packet through a simulated switch (fabric/switch),
// against a floor measured in the same run: handing the packet on as a fresh copy (vector
// allocation + memcpy), which any relay that queues packets on a link pays. Rows, in ns per
// packet (best of five interleaved rounds): the floor; route() of a unicast data packet
// (LFT lookup, no copy); Receive() of it (decision + the copy to transmit); Receive() of a
// directed-route SMP relayed to the next hop (CRC check, hop pointer, CRCs rebuilt); and
// Receive() of a DR SubnGet(NodeInfo) answered by the switch's SMA. Ratio = row / floor.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "softib/fabric/switch.h"
#include "softib/wire/ib_crc.h"

namespace {

using softib::bench::NowNs;
using softib::fabric::Switch;

constexpr const char* kProgram = "softib_bench_switch";
constexpr int kRounds = 5;

void Put16(uint8_t* at, uint16_t v) {
  at[0] = static_cast<uint8_t>(v >> 8);
  at[1] = static_cast<uint8_t>(v);
}

// LRH + BTH (UD SEND only) + DETH + payload + ICRC + VCRC, by the byte positions of IBA 7.7,
// 9.2 and 9.3.2.
std::vector<uint8_t> Packet(uint8_t vl, uint16_t dlid, uint32_t dest_qp,
                            const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> p;
  p.reserve(28 + payload.size() + 6);
  p.resize(28, 0);
  p[0] = static_cast<uint8_t>(vl << 4);
  p[1] = 0x02;
  Put16(&p[2], dlid);
  Put16(&p[4], static_cast<uint16_t>((28 + payload.size() + 4) / 4));
  Put16(&p[6], vl == 15 ? 0xFFFF : 1);
  p[8] = 0x64;
  Put16(&p[10], 0xFFFF);
  p[15] = static_cast<uint8_t>(dest_qp);
  p.insert(p.end(), payload.begin(), payload.end());
  softib::ibcrc::AppendCrcs(p);
  return p;
}

// A DR SubnGet(NodeInfo) whose InitialPath is `path`, its hop pointer at 1 (as the first
// switch receives it).
std::vector<uint8_t> DrSmp(std::vector<uint8_t> path) {
  std::vector<uint8_t> mad(256, 0);
  mad[0] = 1;
  mad[1] = 0x81;
  mad[2] = 1;
  mad[3] = 1;
  mad[6] = 1;
  mad[7] = static_cast<uint8_t>(path.size());
  mad[17] = 0x11;
  Put16(&mad[32], 0xFFFF);
  Put16(&mad[34], 0xFFFF);
  for (std::size_t i = 0; i < path.size(); ++i) mad[129 + i] = path[i];
  return Packet(15, 0xFFFF, 0, mad);
}

template <typename Fn>
double NsPerPacket(Fn fn, uint32_t n) {
  const uint64_t start = NowNs();
  for (uint32_t i = 0; i < n; ++i) fn();
  return static_cast<double>(NowNs() - start) / n;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t iterations = 200000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "-n" || arg == "--iters") && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v <= 0) softib::bench::Die(kProgram, "bad value for " + arg);
      iterations = static_cast<uint32_t>(v);
    } else {
      std::printf("usage: softib_bench_switch [-n PACKETS]\n");
      return arg == "-h" || arg == "--help" ? 0 : 2;
    }
  }

  softib::fabric::SwitchConfig config;
  config.node_guid = 0x0002c90300aa0000ULL;
  config.num_ports = 36;
  config.description = "bench";
  Switch sw(config);
  sw.SetLinkUp(1, true);
  sw.SetLinkUp(2, true);
  // Activate ports 1 and 2 and route LID 64 to port 2, all by SubnSet.
  auto set = [&](uint16_t attribute, uint32_t modifier, auto fill) {
    std::vector<uint8_t> mad(256, 0);
    mad[0] = 1;
    mad[1] = 0x01;
    mad[2] = 1;
    mad[3] = 2;
    Put16(&mad[16], attribute);
    mad[20] = static_cast<uint8_t>(modifier >> 24);
    mad[23] = static_cast<uint8_t>(modifier);
    fill(&mad[64]);
    const auto r = sw.HandleSmp(mad, 1);
    if (!r || (*r)[4] != 0 || (*r)[5] != 0) softib::bench::Die(kProgram, "SubnSet refused");
  };
  for (uint8_t port : {1, 2})
    for (uint8_t state : {3, 4})
      set(0x0015, port, [&](uint8_t* d) {
        d[32] = state;
        d[36] = 0x50;
      });
  set(0x0012, 0, [](uint8_t* d) { Put16(&d[6], 127); });
  set(0x0019, 1, [](uint8_t* d) {
    std::fill(d, d + 64, 0xFF);
    d[0] = 2;
  });

  const std::vector<uint8_t> data = Packet(0, 64, 0x12, std::vector<uint8_t>(256, 0xA5));
  const std::vector<uint8_t> relay = DrSmp({1, 2, 3});
  const std::vector<uint8_t> answer = DrSmp({1});
  if (sw.Receive(1, data).size() != 1 || sw.Receive(1, relay).size() != 1 ||
      sw.Receive(1, answer).size() != 1)
    softib::bench::Die(kProgram, "the switch did not pass the bench packets");

  struct Row {
    const char* name;
    double ns = 1e300;
  };
  Row rows[] = {{"floor:copy"},
                {"route:data"},
                {"receive:data"},
                {"receive:dr-relay"},
                {"receive:dr-answer"}};
  std::size_t sink = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto best = [](Row& row, double v) { row.ns = std::min(row.ns, v); };
    best(rows[0], NsPerPacket(
                      [&] {
                        std::vector<uint8_t> copy(data.begin(), data.end());
                        asm volatile("" ::"r"(copy.data()) : "memory");
                        sink += copy.size();
                      },
                      iterations));
    best(rows[1], NsPerPacket([&] { sink += sw.route(1, data).egress.size(); }, iterations));
    best(rows[2], NsPerPacket([&] { sink += sw.Receive(1, data).size(); }, iterations));
    best(rows[3], NsPerPacket([&] { sink += sw.Receive(1, relay).size(); }, iterations));
    best(rows[4], NsPerPacket([&] { sink += sw.Receive(1, answer).size(); }, iterations));
  }
  asm volatile("" ::"r"(sink));

  const char* line = "-------------------------------------------------------------";
  std::printf("%s\n", line);
  std::printf(" softib switch: ns per packet (best of %d rounds, %u packets)\n", kRounds,
              iterations);
  std::printf(" floor = copying the %zu-byte data packet into a new vector\n", data.size());
  std::printf("%s\n", line);
  std::printf(" %-20s %-10s %-10s %-8s\n", "#row", "ns/pkt", "Mpkt/s", "x floor");
  for (const Row& r : rows)
    std::printf(" %-20s %-10.1f %-10.2f %-8.2f\n", r.name, r.ns, 1e3 / r.ns, r.ns / rows[0].ns);
  std::printf("%s\n", line);
  return 0;
}
