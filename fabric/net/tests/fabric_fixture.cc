#include "fabric_fixture.h"

#include <gtest/gtest.h>

#include "hca/device/packet.h"
#include "softib/fabric/static_subnet.h"

namespace softib::fabric::testing {

void ProgramLft(Switch& sw, const std::map<uint16_t, uint8_t>& routes) {
  EXPECT_EQ(fabric::ProgramLft(sw, routes), "");
}

void ActivatePorts(Switch& sw) { EXPECT_EQ(fabric::ActivatePorts(sw), ""); }

std::unique_ptr<Host> AddHost(Fabric& fabric, uint16_t lid) {
  auto host = std::make_unique<Host>();
  Host* h = host.get();
  h->hca.port(1).lid = lid;
  h->ca_port = fabric.AddCaPort([h](std::span<const uint8_t> p) { h->hca.Receive(1, p); });
  h->hca.port(1).link = &fabric.ca_link(h->ca_port);
  return host;
}

std::vector<uint8_t> UdPacket(uint16_t slid, uint16_t dlid, uint8_t fill) {
  hca::PacketHeaders hdr;
  hdr.lrh.SLID = slid;
  hdr.lrh.DLID = dlid;
  hdr.bth.OpCode = 0x64;  // UD SEND Only
  hdr.bth.DestQP = 0x123;
  hdr.bth.P_Key = 0xFFFF;
  hdr.deth.Q_Key = 0x11111111;
  hdr.deth.SrcQP = 0x456;
  const std::vector<uint8_t> payload(32, fill);
  return hca::BuildPacket(hdr, payload);
}

}  // namespace softib::fabric::testing
