// libFuzzer target for the switch relay and SMA: the input is a series of packets, each
// handed to a fresh, partly programmed switch through route() and Receive(). A packet is
// taken either as raw bytes, or as a MAD wrapped in a VL15 SMP (valid CRCs, so it reaches
// the directed-route rules and the SMA), or as a data packet with valid CRCs. Any crash or
// sanitizer report is a finding; so is a transmit on a port the switch does not have, or,
// for inputs with good CRCs, a transmitted packet whose CRCs are not good.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "softib/fabric/switch.h"
#include "softib/wire/ib_crc.h"

namespace {

using softib::fabric::Switch;
using softib::fabric::SwitchConfig;

constexpr uint8_t kPorts = 18;  // two MFT mask positions

void Put16(uint8_t* at, uint16_t v) {
  at[0] = static_cast<uint8_t>(v >> 8);
  at[1] = static_cast<uint8_t>(v);
}

// LRH + BTH (UD SEND only) + DETH + payload + ICRC + VCRC.
std::vector<uint8_t> Wrap(uint8_t vl, uint16_t dlid, uint16_t slid, uint32_t dest_qp,
                          std::span<const uint8_t> payload) {
  std::vector<uint8_t> p;
  p.reserve(28 + payload.size() + 6);
  p.resize(28, 0);
  p[0] = static_cast<uint8_t>(vl << 4);
  p[1] = 0x02;
  Put16(&p[2], dlid);
  Put16(&p[4], static_cast<uint16_t>(((28 + payload.size() + 4) / 4) & 0x7FF));
  Put16(&p[6], slid);
  p[8] = 0x64;
  Put16(&p[10], 0xFFFF);
  p[13] = static_cast<uint8_t>(dest_qp >> 16);
  p[14] = static_cast<uint8_t>(dest_qp >> 8);
  p[15] = static_cast<uint8_t>(dest_qp);
  for (uint8_t b : payload) p.push_back(b);
  softib::ibcrc::AppendCrcs(p);
  return p;
}

bool CrcsGood(std::span<const uint8_t> packet) {
  const softib::ibcrc::CrcCheck c = softib::ibcrc::CheckCrcs(packet);
  return c.well_formed && c.icrc_ok() && c.vcrc_ok();
}

Switch MakeSwitch() {
  SwitchConfig config;
  config.node_guid = 0x0002c90300aa0000ULL;
  config.num_ports = kPorts;
  config.description = "fuzz";
  config.linear_fdb_cap = 1024;
  config.multicast_fdb_cap = 64;
  Switch sw(config);
  for (uint8_t p = 1; p <= kPorts; p += 2) sw.SetLinkUp(p, true);
  return sw;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  Switch sw = MakeSwitch();
  std::span<const uint8_t> in(data, size);
  // Each packet: [mode][ingress][length][bytes...].
  while (in.size() >= 3) {
    const uint8_t mode = in[0] % 4;
    const uint8_t ingress = in[1] % (kPorts + 2);  // includes one port that does not exist
    const std::size_t length = std::min<std::size_t>(in[2] * 2u, in.size() - 3);
    const std::span<const uint8_t> body = in.subspan(3, length);
    in = in.subspan(3 + length);
    sw.SetTimeSeconds(mode);

    std::vector<uint8_t> packet;
    bool good_crcs = true;
    if (mode == 0) {
      packet.assign(body.begin(), body.end());
      good_crcs = false;
    } else if (mode == 1 || mode == 2) {
      std::vector<uint8_t> mad(256, 0);
      std::copy_n(body.begin(), std::min<std::size_t>(body.size(), mad.size()), mad.begin());
      const uint16_t dlid = mode == 1 ? 0xFFFF : sw.lid();
      packet = Wrap(15, dlid, 0xFFFF, 0, mad);
    } else {
      const uint16_t dlid = body.size() >= 2 ? static_cast<uint16_t>(body[0] << 8 | body[1]) : 1;
      const uint8_t vl = body.size() >= 3 ? body[2] & 0xF : 0;
      packet = Wrap(vl, dlid, 1, body.size() >= 4 ? body[3] : 2, body);
    }

    (void)sw.route(ingress, packet);
    for (const softib::fabric::Transmit& t : sw.Receive(ingress, packet)) {
      if (t.port == 0 || t.port > kPorts) __builtin_trap();
      if (good_crcs && !CrcsGood(t.bytes)) __builtin_trap();
    }
  }
  return 0;
}
