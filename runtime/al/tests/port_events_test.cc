// Port state changes reach AL clients: unplugging a cable gives both cabled CAs' users a
// PORT_DOWN asynchronous event (with the port and the CA handle) and the PORT class PnP
// registrations a PORT_DOWN record with the port's attributes; cabling it again gives
// PORT_ACTIVE the same ways. CA removal takes the peer's port down too. A port plugged into
// a cable outside the node (a fabric's) follows that cable's link: Down with PORT_DOWN when
// it drops, and back in Init for the SM (or Active with its LID when no SM manages it).
#include <map>
#include <set>

#include "hca/device/cable.h"
#include "kernel_client.h"
#include "softib/mad/mad_sm.h"

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

// A fabric's cable as the node sees it: the port transmits into it; nothing comes back.
class SwallowingCable final : public hca::Link {
 public:
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    packet.clear();
    return packet;
  }
};

// SubnGet(PortInfo) of the port's SMA through LocalMad, or SubnSet of `set` (IBA 14.2.5.6).
mad::PortInfo PortInfoOf(stack::NodeStack& node, uint64_t guid, uint8_t port,
                         const mad::PortInfo* set = nullptr) {
  std::array<uint8_t, 256> request{}, response{};
  request[0] = 1;                                                   // BaseVersion
  request[1] = 0x01;                                                // LID-routed SMP
  request[2] = 1;                                                   // ClassVersion
  request[3] = set != nullptr ? 2 : 1;                              // SubnSet / SubnGet
  request[17] = static_cast<uint8_t>(mad::PortInfo::kAttributeId);  // 0x0015
  request[23] = port;                                               // AttributeModifier
  if (set != nullptr) (void)set->Pack(std::span<uint8_t>(request.data() + 64, 64));
  EXPECT_EQ(node.LocalMad(guid, port, request, response), Status::SUCCESS);
  EXPECT_EQ(response[4] << 8 | response[5], 0) << "MAD status";
  mad::PortInfo info;
  EXPECT_TRUE(info.Unpack(std::span<const uint8_t>(response.data() + 64, 64)));
  return info;
}

// What an SM sends to move a port to `state` (Armed 3, Active 4), LID `lid` with it.
mad::PortInfo SetPortState(stack::NodeStack& node, uint64_t guid, uint8_t port, uint16_t lid,
                           uint8_t state) {
  mad::PortInfo info = PortInfoOf(node, guid, port);
  info.LID = lid;
  info.PortState = state;
  info.PortPhysicalState = 0;  // 0: no change (the fields an SM leaves alone)
  info.LinkDownDefaultState = 0;
  info.LinkWidthEnabled = 0;
  info.LinkSpeedEnabled = 0;
  return PortInfoOf(node, guid, port, &info);
}

// Skips the records before the PnP registration's first `event` (the present state, LID
// changes...): the AL has taken in what came before it.
void SkipPnpTo(Client& client, uint64_t reg, abi::PnpEvent event) {
  for (int i = 0; i < 16; ++i) {
    if (NextPnp(client, reg).event == event) return;
  }
  ADD_FAILURE() << "no PnP event " << static_cast<int>(event);
}
void SkipAsyncTo(Client& client, abi::AsyncEventType code) {
  for (int i = 0; i < 16; ++i) {
    if (NextAsync(client, client.al_handle()).code == code) return;
  }
  ADD_FAILURE() << "no async event " << static_cast<int>(code);
}

constexpr uint8_t kDown = 1, kInit = 2, kArmed = 3, kActive = 4;
constexpr uint8_t kPolling = 2, kLinkUp = 5;

TEST(PortEvents, AnExternalCablesFlapTakesAnSmManagedPortDownAndBackToInit) {
  SwallowingCable cable;  // outlives the node, which transmits into it
  stack::NodeConfig config;
  config.name = "ext-link-sm";
  stack::CaConfig ca{0, 1};
  ca.sm_assigns_lids = true;
  config.cas = {ca};
  config.cable_pairs = false;
  Status status;
  auto node = stack::NodeStack::Boot(config, &status);
  ASSERT_TRUE(node) << static_cast<int>(status);
  const uint64_t guid = node->ca_guids()[0];
  std::shared_ptr<hca::Link> inbound;
  ASSERT_EQ(node->PlugExternal(guid, 1, &cable, &inbound), Status::SUCCESS);
  Client client(node->node());
  const uint64_t handle = OpenCa(client, guid, 0xE1);
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(client.RegisterPnp(
                {{client.al_handle()}, abi::PnpClass::PORT, abi::PnpRegFlags{}, 0x78}, &reg),
            Status::SUCCESS);
  SkipPnpTo(client, reg.reg.value, abi::PnpEvent::REG_COMPLETE);
  // The SM's first sweep: LID 0x21, Init -> Armed -> Active, which the AL hears (after
  // the LID change).
  EXPECT_EQ(PortInfoOf(*node, guid, 1).PortState, kInit);
  EXPECT_EQ(SetPortState(*node, guid, 1, 0x21, kArmed).PortState, kArmed);
  EXPECT_EQ(SetPortState(*node, guid, 1, 0x21, kActive).PortState, kActive);
  SkipAsyncTo(client, abi::AsyncEventType::PORT_ACTIVE);
  SkipPnpTo(client, reg.reg.value, abi::PnpEvent::PORT_ACTIVE);

  // The link drops: Down, the physical layer Polling, PORT_DOWN to the CA's users and the
  // PORT class registrations; the LID stays (the SM may keep it).
  ASSERT_EQ(node->SetExternalLinkUp(guid, 1, false), Status::SUCCESS);
  const abi::AsyncEventRecord down = NextAsync(client, client.al_handle());
  EXPECT_EQ(down.code, abi::AsyncEventType::PORT_DOWN);
  EXPECT_EQ(down.port_num, 1);
  EXPECT_EQ(down.ca.value, handle);
  EXPECT_EQ(down.context, 0xE1u);
  abi::PnpEventRecord pnp = NextPnp(client, reg.reg.value);
  EXPECT_EQ(pnp.event, abi::PnpEvent::PORT_DOWN);
  EXPECT_EQ(pnp.port_num, 1);
  EXPECT_EQ(pnp.port.link_state, kDown);
  mad::PortInfo info = PortInfoOf(*node, guid, 1);
  EXPECT_EQ(info.PortState, kDown);
  EXPECT_EQ(info.PortPhysicalState, kPolling);
  EXPECT_EQ(info.LID, 0x21);
  // Saying it again changes nothing (no second PORT_DOWN: the next event below is ACTIVE).
  ASSERT_EQ(node->SetExternalLinkUp(guid, 1, false), Status::SUCCESS);

  // The link trains again: the port waits in Init for the SM, with nothing reported.
  ASSERT_EQ(node->SetExternalLinkUp(guid, 1, true), Status::SUCCESS);
  info = PortInfoOf(*node, guid, 1);
  EXPECT_EQ(info.PortState, kInit);
  EXPECT_EQ(info.PortPhysicalState, kLinkUp);
  EXPECT_EQ(info.LID, 0x21);
  ASSERT_EQ(node->SetExternalLinkUp(guid, 1, true), Status::SUCCESS);  // still Init
  EXPECT_EQ(PortInfoOf(*node, guid, 1).PortState, kInit);
  // The SM's re-sweep: Armed, then Active, which its users hear.
  EXPECT_EQ(SetPortState(*node, guid, 1, 0x21, kArmed).PortState, kArmed);
  EXPECT_EQ(SetPortState(*node, guid, 1, 0x21, kActive).PortState, kActive);
  const abi::AsyncEventRecord active = NextAsync(client, client.al_handle());
  EXPECT_EQ(active.code, abi::AsyncEventType::PORT_ACTIVE);
  EXPECT_EQ(active.port_num, 1);
  pnp = NextPnp(client, reg.reg.value);
  EXPECT_EQ(pnp.event, abi::PnpEvent::PORT_ACTIVE);
  EXPECT_EQ(pnp.port.link_state, kActive);
}

TEST(PortEvents, AnExternalCablesFlapBringsAPortWithoutAnSmBackActive) {
  SwallowingCable cable;
  stack::NodeConfig config;
  config.name = "ext-link-static";
  config.cas = {stack::CaConfig{0, 2}, stack::CaConfig{0, 2}};  // port 1s cabled to each other
  Status status;
  auto node = stack::NodeStack::Boot(config, &status);
  ASSERT_TRUE(node) << static_cast<int>(status);
  const auto guids = node->ca_guids();
  std::shared_ptr<hca::Link> inbound;
  Client client(node->node());
  (void)OpenCa(client, guids[0], 0xE2);
  ASSERT_EQ(node->PlugExternal(guids[0], 2, &cable, &inbound), Status::SUCCESS);
  const mad::PortInfo before = PortInfoOf(*node, guids[0], 2);
  EXPECT_EQ(before.PortState, kActive);
  EXPECT_NE(before.LID, 0);
  SkipAsyncTo(client, abi::AsyncEventType::PORT_ACTIVE);  // the plug's

  ASSERT_EQ(node->SetExternalLinkUp(guids[0], 2, false), Status::SUCCESS);
  abi::AsyncEventRecord r = NextAsync(client, client.al_handle());
  EXPECT_EQ(r.code, abi::AsyncEventType::PORT_DOWN);
  EXPECT_EQ(r.port_num, 2);
  EXPECT_EQ(PortInfoOf(*node, guids[0], 2).PortState, kDown);
  ASSERT_EQ(node->SetExternalLinkUp(guids[0], 2, true), Status::SUCCESS);
  r = NextAsync(client, client.al_handle());
  EXPECT_EQ(r.code, abi::AsyncEventType::PORT_ACTIVE);
  EXPECT_EQ(r.port_num, 2);
  const mad::PortInfo after = PortInfoOf(*node, guids[0], 2);
  EXPECT_EQ(after.PortState, kActive);
  EXPECT_EQ(after.PortPhysicalState, kLinkUp);
  EXPECT_EQ(after.LID, before.LID);

  // Only a port plugged into an external cable has one to follow.
  EXPECT_EQ(node->SetExternalLinkUp(0xDEAD, 2, false), Status::INVALID_GUID);
  EXPECT_EQ(node->SetExternalLinkUp(guids[0], 1, false), Status::INVALID_PORT);  // in-node cable
  EXPECT_EQ(node->SetExternalLinkUp(guids[1], 2, false), Status::INVALID_PORT);  // not plugged
  EXPECT_EQ(node->SetExternalLinkUp(guids[0], 0, false), Status::INVALID_PORT);
  EXPECT_EQ(node->SetExternalLinkUp(guids[0], 3, false), Status::INVALID_PORT);
  EXPECT_EQ(PortInfoOf(*node, guids[1], 1).PortState, kActive);  // untouched
  // Unplugged, the port has no external cable any more.
  ASSERT_EQ(node->UncablePort(guids[0], 2), Status::SUCCESS);
  EXPECT_EQ(node->SetExternalLinkUp(guids[0], 2, true), Status::INVALID_PORT);
}

// What an SM sets in a port reaches the PORT class PnP registrations as IBAL's port news,
// each with the port's attributes as they are after the change: a new LID (LID_CHANGE), a
// new master SM (SM_CHANGE), a new subnet prefix (GID_CHANGE), a P_Key table block
// (PKEY_CHANGE). A Set that changes nothing is no news.
TEST(PortEvents, WhatAnSmSetsInAPortReachesPnpClients) {
  auto node = BootDefault("port-events-sm-news");
  ASSERT_TRUE(node);
  const uint64_t guid = node->ca_guids()[0];
  Client client(node->node());
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(client.RegisterPnp(
                {{client.al_handle()}, abi::PnpClass::PORT, abi::PnpRegFlags{}, 0x51}, &reg),
            Status::SUCCESS);
  SkipPnpTo(client, reg.reg.value, abi::PnpEvent::REG_COMPLETE);
  auto next = [&](abi::PnpEvent expected) {
    const abi::PnpEventRecord r = NextPnp(client, reg.reg.value);
    EXPECT_EQ(r.event, expected);
    EXPECT_EQ(r.port_num, 1);
    EXPECT_EQ(be64toh(r.ca_guid), guid);
    EXPECT_EQ(r.pnp_context, 0x51u);
    return r;
  };
  auto set = [&](auto change) {
    mad::PortInfo info = PortInfoOf(*node, guid, 1);
    info.PortState = 0;  // no change
    info.PortPhysicalState = 0;
    info.LinkDownDefaultState = 0;
    info.LinkWidthEnabled = 0;
    info.LinkSpeedEnabled = 0;
    change(info);
    PortInfoOf(*node, guid, 1, &info);
  };

  set([](mad::PortInfo& info) { info.LID = 0x0234; });
  EXPECT_EQ(next(abi::PnpEvent::LID_CHANGE).port.lid, 0x0234);
  set([](mad::PortInfo& info) { info.MasterSMLID = 0x0077; });
  EXPECT_EQ(next(abi::PnpEvent::SM_CHANGE).port.sm_lid, 0x0077);
  set([](mad::PortInfo& info) { info.GIDPrefix = 0xFEC0000000000042ull; });
  next(abi::PnpEvent::GID_CHANGE);
  // Nothing changes: no record (the P_Key change below is the next one).
  set([](mad::PortInfo&) {});

  std::array<uint8_t, 256> request{}, response{};
  request[0] = 1;
  request[1] = 0x01;
  request[2] = 1;
  request[3] = 2;  // SubnSet
  request[17] = static_cast<uint8_t>(mad::P_KeyTable::kAttributeId);
  mad::P_KeyTable block;
  block.P_KeyEntry[0] = 0xFFFF;
  block.P_KeyEntry[1] = 0x8123;
  (void)block.Pack(std::span<uint8_t>(request.data() + 64, 64));
  ASSERT_EQ(node->LocalMad(guid, 1, request, response), Status::SUCCESS);
  EXPECT_EQ(response[4] << 8 | response[5], 0);
  next(abi::PnpEvent::PKEY_CHANGE);
}

}  // namespace
}  // namespace softib::testing
