// The AL's device management agent, as a remote DevMgt client sees it: CA B's client
// registers an I/O controller with two services (verbs_ioc); a client on CA A asks CA B's
// QP1 for IOUnitInfo, IOControllerProfile and ServiceEntries and gets them (bytes at the
// IBA 16.3.3 offsets), with the DevMgt statuses for an empty slot and a Set; CA B's ports
// advertise IsDeviceManagementSupported while the controller is registered.
#include "mad_client.h"
#include "kernel/verbs_ioc_direct.h"

namespace softib::testing {
namespace {

constexpr uint8_t kDevMgt = 0x06;

// CapabilityMask of port 1 of `ca` as QueryCa reports it.
uint32_t Capabilities(Client& client, uint64_t ca) {
  abi::QueryCaOut query{};
  std::vector<abi::PortAttributes> ports;
  EXPECT_EQ(client.QueryCa(ca, &query, &ports), Status::SUCCESS);
  return ports.empty() ? 0 : static_cast<uint32_t>(ports[0].capabilities);
}

struct DevMgtClient {
  Client& client;
  MadEnd end;
  uint32_t next_tid = 1;
  // A Get (or Set) of `attribute` to LID 2's QP1; the response MAD.
  std::vector<uint8_t> Ask(uint16_t attribute, uint32_t modifier, uint8_t method = 0x01) {
    auto request = MakeMad(kDevMgt, method, next_tid++, attribute);
    for (int i = 0; i < 4; ++i) request[20 + i] = static_cast<uint8_t>(modifier >> (24 - 8 * i));
    EXPECT_EQ(SendMadTo(client, SendTo(end.svc, 2, 256, 1000, 2, true, 1), request, nullptr),
              Status::SUCCESS);
    MadEvent event;
    EXPECT_TRUE(NextMadEvent(client, end.svc, &event));
    EXPECT_EQ(event.out.event.kind, abi::MadEventKind::RECEIVED);
    MadEvent done;
    EXPECT_TRUE(NextMadEvent(client, end.svc, &done));
    EXPECT_EQ(done.out.event.status, abi::WcStatus::SUCCESS);
    return event.mad;
  }
};

uint16_t StatusOf(const std::vector<uint8_t>& m) { return static_cast<uint16_t>(m[4] << 8 | m[5]); }

TEST(DevMgtAgent, ARegisteredControllerIsFoundThroughTheAgentOfItsCa) {
  auto node = BootDefault("devmgt-agent");
  ASSERT_TRUE(node);
  Client client(node->node());
  DevMgtClient dm{client, {}};
  ASSERT_NO_FATAL_FAILURE(
      OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::GSI_ALIAS, &dm.end));
  ASSERT_EQ(RegSvc(client, &dm.end, SvcParams(kDevMgt, {})), Status::SUCCESS);

  abi::OpenCaOut ca_b{};
  ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(node->ca_guids()[1]), 0}, &ca_b),
            Status::SUCCESS);
  constexpr uint32_t kDeviceManagement = 0x00080000;
  EXPECT_EQ(Capabilities(client, ca_b.ca.value) & kDeviceManagement, 0u);

  // Nothing registered yet: no controller, ChangeID 0.
  auto r = dm.Ask(0x0010, 0);
  ASSERT_EQ(r.size(), 256u);
  EXPECT_EQ(r[3], 0x81);
  EXPECT_EQ(StatusOf(r), 0);
  EXPECT_EQ(r[64 + 2], 16);    // MaxControllers
  EXPECT_EQ(r[64 + 4], 0x00);  // slot 1 empty

  abi::CreateIocIn create{};
  create.ca.value = ca_b.ca.value;
  const uint64_t guid = 0x0002C903000ABCDEull;
  for (int i = 0; i < 8; ++i) create.profile[i] = static_cast<uint8_t>(guid >> (56 - 8 * i));
  create.profile[29] = 0x00;
  create.profile[28] = 0x01;  // IOClass 0x0100
  std::memcpy(create.profile + 64, "softib test IOC", 15);
  abi::CreateIocOut ioc{};
  ASSERT_EQ(kernel::IbCreateIoc(client.al(), create, ioc), Status::SUCCESS);
  abi::AddIocServiceIn add{};
  add.ioc = ioc.ioc;
  add.service_id = htobe64(0x0002C90300000001ull);
  std::memcpy(add.name, "SRP.T10:0002C903000ABCDE", 24);
  abi::AddIocServiceOut svc1{}, svc2{};
  ASSERT_EQ(kernel::IbAddIocService(client.al(), add, svc1), Status::SUCCESS);
  add.service_id = htobe64(0x0002C90300000002ull);
  std::memcpy(add.name, "second", 7);
  ASSERT_EQ(kernel::IbAddIocService(client.al(), add, svc2), Status::SUCCESS);
  abi::RegisterIocOut slot{};
  ASSERT_EQ(kernel::IbRegisterIoc(client.al(), {ioc.ioc}, slot), Status::SUCCESS);
  EXPECT_EQ(slot.slot, 1);
  EXPECT_EQ(kernel::IbRegisterIoc(client.al(), {ioc.ioc}, slot), Status::INVALID_STATE);
  EXPECT_NE(Capabilities(client, ca_b.ca.value) & kDeviceManagement, 0u);

  r = dm.Ask(0x0010, 0);
  EXPECT_EQ(StatusOf(r), 0);
  EXPECT_EQ(r[64] << 8 | r[65], 1);  // ChangeID moved
  EXPECT_EQ(r[64 + 4], 0x10);        // slot 1 present

  r = dm.Ask(0x0011, 1);
  EXPECT_EQ(StatusOf(r), 0);
  uint64_t got_guid = 0;
  for (int i = 0; i < 8; ++i) got_guid = got_guid << 8 | r[64 + i];
  EXPECT_EQ(got_guid, guid);
  EXPECT_EQ(r[64 + 28] << 8 | r[64 + 29], 0x0100);
  EXPECT_EQ(r[64 + 54], 2);  // ServiceEntries
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data() + 64 + 64)), "softib test IOC");

  r = dm.Ask(0x0012, 1u << 16 | 1u << 8 | 0u);
  EXPECT_EQ(StatusOf(r), 0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data() + 64)), "SRP.T10:0002C903000ABCDE");
  EXPECT_EQ(r[64 + 47], 0x01);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data() + 64 + 48)), "second");
  EXPECT_EQ(r[64 + 48 + 47], 0x02);

  EXPECT_EQ(StatusOf(dm.Ask(0x0011, 2)), 0x0100);                        // no IOC in slot 2
  EXPECT_EQ(StatusOf(dm.Ask(0x0012, 1u << 16 | 2u << 8 | 2u)), 0x0200);  // no entry 2
  EXPECT_EQ(StatusOf(dm.Ask(0x0010, 0, 0x02)), 0x000C);                  // Set: read-only
  const auto cpi = dm.Ask(0x0001, 0);
  EXPECT_EQ(StatusOf(cpi), 0);
  EXPECT_EQ(cpi[64], 1);  // BaseVersion
  EXPECT_EQ(cpi[65], 1);  // ClassVersion

  // A controller with services cannot go; without them it does, and so does the capability.
  EXPECT_EQ(kernel::IbDestroyIoc(client.al(), {ioc.ioc}), Status::RESOURCE_BUSY);
  ASSERT_EQ(kernel::IbRemoveIocService(client.al(), {svc1.service}), Status::SUCCESS);
  ASSERT_EQ(kernel::IbRemoveIocService(client.al(), {svc2.service}), Status::SUCCESS);
  ASSERT_EQ(kernel::IbDestroyIoc(client.al(), {ioc.ioc}), Status::SUCCESS);
  EXPECT_EQ(Capabilities(client, ca_b.ca.value) & kDeviceManagement, 0u);
  r = dm.Ask(0x0010, 0);
  EXPECT_EQ(r[64] << 8 | r[65], 4);  // + two services removed + the controller
  EXPECT_EQ(r[64 + 4], 0x00);
}

}  // namespace
}  // namespace softib::testing
