// Port state changes reach AL clients: unplugging a cable gives both cabled CAs' users a
// PORT_DOWN asynchronous event (with the port and the CA handle) and the PORT class PnP
// registrations a PORT_DOWN record with the port's attributes; cabling it again gives
// PORT_ACTIVE the same ways. CA removal takes the peer's port down too.
#include <map>
#include <set>

#include "kernel_client.h"

namespace softib::testing {
namespace {

uint64_t OpenCa(Client& client, uint64_t guid, uint64_t context) {
  abi::OpenCaOut ca{};
  EXPECT_EQ(client.OpenCa({{client.al_handle()}, htobe64(guid), context}, &ca), Status::SUCCESS);
  return ca.ca.value;
}

TEST(PortEvents, UnplugAndReplugReachAsyncAndPnpClientsOfBothEnds) {
  auto node = BootDefault("port-events");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  Client client(node->node());
  const uint64_t ca0 = OpenCa(client, guids[0], 0xA0);
  const uint64_t ca1 = OpenCa(client, guids[1], 0xA1);
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(client.RegisterPnp(
                {{client.al_handle()}, abi::PnpClass::PORT, abi::PnpRegFlags{}, 0x77}, &reg),
            Status::SUCCESS);
  // The present state: each port added and ACTIVE, then REG_COMPLETE.
  for (int i = 0; i < 4; ++i) NextPnp(client, reg.reg.value);
  ASSERT_EQ(NextPnp(client, reg.reg.value).event, abi::PnpEvent::REG_COMPLETE);

  ASSERT_EQ(node->UncablePort(guids[0], 1), Status::SUCCESS);
  EXPECT_EQ(node->UncablePort(guids[0], 1), Status::INVALID_PORT);  // nothing left to unplug
  // One async event per CA, each to the open of that CA (the order between CAs is free).
  std::map<uint64_t, abi::AsyncEventRecord> down;
  for (int i = 0; i < 2; ++i) {
    const abi::AsyncEventRecord r = NextAsync(client, client.al_handle());
    down[r.ca.value] = r;
  }
  ASSERT_EQ(down.count(ca0), 1u);
  ASSERT_EQ(down.count(ca1), 1u);
  for (const auto& [ca, r] : down) {
    EXPECT_EQ(r.code, abi::AsyncEventType::PORT_DOWN);
    EXPECT_EQ(r.port_num, 1);
    EXPECT_EQ(r.context, ca == ca0 ? 0xA0u : 0xA1u);
    EXPECT_EQ(r.qp.value, 0u);
  }
  std::set<uint64_t> pnp_cas;
  for (int i = 0; i < 2; ++i) {
    const abi::PnpEventRecord r = NextPnp(client, reg.reg.value);
    EXPECT_EQ(r.event, abi::PnpEvent::PORT_DOWN);
    EXPECT_EQ(r.port_num, 1);
    EXPECT_EQ(r.port.link_state, 1);  // DOWN, as the port is now
    EXPECT_EQ(r.pnp_context, 0x77u);
    pnp_cas.insert(be64toh(r.ca_guid));
  }
  EXPECT_EQ(pnp_cas, (std::set<uint64_t>{guids[0], guids[1]}));
  abi::QueryCaOut attrs{};
  std::vector<abi::PortAttributes> ports;
  ASSERT_EQ(client.QueryCa(ca1, &attrs, &ports), Status::SUCCESS);
  EXPECT_EQ(ports[0].link_state, 1);

  ASSERT_EQ(node->CablePorts(guids[0], 1, guids[1], 1), Status::SUCCESS);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(NextAsync(client, client.al_handle()).code, abi::AsyncEventType::PORT_ACTIVE);
    const abi::PnpEventRecord r = NextPnp(client, reg.reg.value);
    EXPECT_EQ(r.event, abi::PnpEvent::PORT_ACTIVE);
    EXPECT_EQ(r.port.link_state, 4);
  }
}

TEST(PortEvents, RemovingACaTakesItsPeersPortDown) {
  auto node = BootDefault("port-events-remove");
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  Client client(node->node());
  const uint64_t ca1 = OpenCa(client, guids[1], 0xB1);
  ASSERT_EQ(node->RemoveCa(guids[0]), Status::SUCCESS);
  const abi::AsyncEventRecord r = NextAsync(client, client.al_handle());
  EXPECT_EQ(r.code, abi::AsyncEventType::PORT_DOWN);
  EXPECT_EQ(r.ca.value, ca1);
  EXPECT_EQ(r.port_num, 1);
  abi::QueryCaOut attrs{};
  std::vector<abi::PortAttributes> ports;
  ASSERT_EQ(client.QueryCa(ca1, &attrs, &ports), Status::SUCCESS);
  EXPECT_EQ(ports[0].link_state, 1);
  EXPECT_EQ(node->UncablePort(guids[1], 1), Status::INVALID_PORT);
}

}  // namespace
}  // namespace softib::testing
