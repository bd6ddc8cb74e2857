#include "fabric_fixture.h"

#include <gtest/gtest.h>

#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"

namespace softib::fabric::testing {

namespace {
// MAD header positions (IBA 13.4.3) and the SMP data (IBA 14.2.1.1).
constexpr std::size_t kMethod = 3, kStatus = 4, kTid = 8, kAttributeId = 16, kModifier = 20,
                      kData = 64;
}  // namespace

std::array<uint8_t, 64> SmaCall(Switch& sw, uint8_t method, uint16_t attribute, uint32_t modifier,
                                const std::array<uint8_t, 64>& data) {
  std::array<uint8_t, 256> mad{};
  mad[0] = 1;     // BaseVersion
  mad[1] = 0x01;  // SubnMgt, LID-routed
  mad[2] = 1;     // ClassVersion
  mad[kMethod] = method;
  mad[kTid + 7] = 0x42;
  mad[kAttributeId] = static_cast<uint8_t>(attribute >> 8);
  mad[kAttributeId + 1] = static_cast<uint8_t>(attribute);
  for (int i = 0; i < 4; ++i) mad[kModifier + i] = static_cast<uint8_t>(modifier >> (24 - 8 * i));
  std::copy(data.begin(), data.end(), mad.begin() + kData);
  const auto response = sw.HandleSmp(mad, /*in_port=*/1);
  std::array<uint8_t, 64> out{};
  EXPECT_TRUE(response.has_value());
  if (!response) return out;
  EXPECT_EQ((*response)[kStatus] << 8 | (*response)[kStatus + 1], 0)
      << "attribute 0x" << std::hex << attribute << " modifier " << modifier;
  std::copy_n(response->begin() + kData, 64, out.begin());
  return out;
}

void ProgramLft(Switch& sw, const std::map<uint16_t, uint8_t>& routes) {
  constexpr uint8_t kGet = 0x01, kSet = 0x02;
  const uint16_t top = routes.empty() ? 0 : routes.rbegin()->first;
  std::map<uint32_t, mad::LinearForwardingTable> blocks;
  for (const auto& [lid, port] : routes) {
    auto [it, fresh] = blocks.try_emplace(lid / 64u);
    if (fresh) it->second.Port.fill(0xFF);
    it->second.Port[lid % 64u] = port;
  }
  for (const auto& [block, table] : blocks) {
    std::array<uint8_t, 64> data{};
    table.Pack(data);
    SmaCall(sw, kSet, mad::LinearForwardingTable::kAttributeId, block, data);
  }
  mad::SwitchInfo info;
  info.Unpack(SmaCall(sw, kGet, mad::SwitchInfo::kAttributeId, 0, {}));
  info.LinearFDBTop = top;
  std::array<uint8_t, 64> data{};
  info.Pack(data);
  SmaCall(sw, kSet, mad::SwitchInfo::kAttributeId, 0, data);
}

void ActivatePorts(Switch& sw) {
  constexpr uint8_t kGet = 0x01, kSet = 0x02;
  for (const mad::PortState state : {mad::PortState::ARMED, mad::PortState::ACTIVE}) {
    for (uint8_t port = 1; port <= sw.num_ports(); ++port) {
      // Init -> Armed, then Armed -> Active; Down (uncabled) and Active ports stay.
      const auto from = static_cast<uint8_t>(
          state == mad::PortState::ARMED ? mad::PortState::INIT : mad::PortState::ARMED);
      if (sw.port_info(port).PortState != from) continue;
      mad::PortInfo info;
      info.Unpack(SmaCall(sw, kGet, mad::PortInfo::kAttributeId, port, {}));
      info.PortState = static_cast<uint8_t>(state);
      info.PortPhysicalState = 0;  // no change, as an SM writes it
      info.LinkWidthEnabled = 0;
      info.LinkSpeedEnabled = 0;
      std::array<uint8_t, 64> data{};
      info.Pack(data);
      SmaCall(sw, kSet, mad::PortInfo::kAttributeId, port, data);
    }
  }
}

std::unique_ptr<Host> AddHost(Fabric& fabric, uint16_t lid) {
  auto host = std::make_unique<Host>();
  Host* h = host.get();
  h->hca.port(1).lid = lid;
  h->ca_port = fabric.AddCaPort([h](std::span<const uint8_t> p) { h->hca.Receive(1, p); });
  h->hca.port(1).link = &fabric.ca_link(h->ca_port);
  return host;
}

}  // namespace softib::fabric::testing
