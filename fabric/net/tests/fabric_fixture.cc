#include "fabric_fixture.h"

#include <gtest/gtest.h>

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

}  // namespace softib::fabric::testing
