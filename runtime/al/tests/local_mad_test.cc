// The LocalMad verb end to end (AL → CI → the port's SMA/PMA in the device), by direct call
// and by IRP: SubnGet/SubnSet(PortInfo) changes the LID QueryCa reports and the clients
// hear LID_CHANGE; the statuses of a bad port, a MAD no agent takes and an M_Key refusal.
// MAD bytes from the spec's tables (IBA 13.4.3, 14.2.5.6).
#include "kernel_client.h"

namespace softib::testing {
namespace {

using Mad = std::array<uint8_t, 256>;

Mad Smp(uint8_t method, uint16_t attribute, uint64_t mkey = 0, uint8_t mgmt_class = 0x01) {
  Mad m{};
  m[0] = 1;
  m[1] = mgmt_class;
  m[2] = 1;
  m[3] = method;
  m[16] = static_cast<uint8_t>(attribute >> 8);
  m[17] = static_cast<uint8_t>(attribute);
  for (int i = 0; i < 8; ++i) m[24 + i] = static_cast<uint8_t>(mkey >> (56 - 8 * i));
  return m;
}

struct LocalMadClient {
  Client& client;
  uint64_t ca;
  bool by_irp = false;
  Status Call(uint8_t port, const Mad& request, Mad* response) {
    abi::LocalMadIn in{};
    in.ca.value = ca;
    in.port_num = port;
    std::memcpy(in.request, request.data(), 256);
    abi::LocalMadOut out{};
    const Status s = by_irp ? kernel::CallLocalMadIrp(kernel::IbGetAlDevice(client.al()),
                                                      kernel::IbGetAlFile(client.al()), in, &out)
                            : kernel::IbLocalMad(client.al(), in, out);
    std::memcpy(response->data(), out.response, 256);
    return s;
  }
};

TEST(LocalMad, PortInfoThroughTheVerbMovesTheLidAndClientsHearIt) {
  auto node = BootDefault("local-mad");
  ASSERT_TRUE(node);
  const uint64_t guid = node->ca_guids()[0];
  Client client(node->node());
  abi::OpenCaOut open{};
  ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(guid), 0xC0}, &open), Status::SUCCESS);
  LocalMadClient mad{client, open.ca.value};

  for (bool irp : {false, true}) {
    mad.by_irp = irp;
    Mad r{};
    ASSERT_EQ(mad.Call(1, Smp(0x01, 0x0011), &r), Status::SUCCESS) << irp;
    EXPECT_EQ(r[3], 0x81);
    EXPECT_EQ(r[4] << 8 | r[5], 0);
    uint64_t node_guid = 0;
    for (int i = 0; i < 8; ++i) node_guid = node_guid << 8 | r[64 + 12 + i];
    EXPECT_EQ(node_guid, guid);
    EXPECT_EQ(r[64 + 2], 1);  // CA
  }

  mad.by_irp = false;
  Mad info{};
  ASSERT_EQ(mad.Call(1, Smp(0x01, 0x0015), &info), Status::SUCCESS);
  EXPECT_EQ(info[64 + 32] & 0xF, 4);  // Active: a preconfigured port
  Mad set = Smp(0x02, 0x0015);
  std::memcpy(set.data() + 64, info.data() + 64, 64);
  set[64 + 16] = 0x01;  // LID 0x0123
  set[64 + 17] = 0x23;
  set[64 + 32] &= 0xF0;  // PortState: no change
  set[64 + 33] &= 0x0F;  // PortPhysicalState: no change
  Mad r{};
  ASSERT_EQ(mad.Call(1, set, &r), Status::SUCCESS);
  EXPECT_EQ(r[4] << 8 | r[5], 0);
  EXPECT_EQ(r[64 + 16] << 8 | r[64 + 17], 0x0123);
  abi::QueryCaOut query{};
  std::vector<abi::PortAttributes> ports;
  ASSERT_EQ(client.QueryCa(open.ca.value, &query, &ports), Status::SUCCESS);
  EXPECT_EQ(ports[0].lid, 0x0123);
  EXPECT_EQ(ports[0].link_state, 4);
  const abi::AsyncEventRecord event = NextAsync(client, client.al_handle());
  EXPECT_EQ(event.code, abi::AsyncEventType::LID_CHANGE);
  EXPECT_EQ(event.port_num, 1);
  EXPECT_EQ(event.context, 0xC0u);

  // PerfMgt PortCounters of port 1.
  Mad pma = Smp(0x01, 0x0012, 0, 0x04);
  pma[64 + 1] = 1;
  ASSERT_EQ(mad.Call(1, pma, &r), Status::SUCCESS);
  EXPECT_EQ(r[1], 0x04);
  EXPECT_EQ(r[4] << 8 | r[5], 0);

  // No such port; no agent for an SA MAD; an M_Key that refuses a wrong key.
  EXPECT_EQ(mad.Call(3, Smp(0x01, 0x0011), &r), Status::INVALID_PORT);
  EXPECT_EQ(mad.Call(1, Smp(0x01, 0x0011, 0, 0x03), &r), Status::INVALID_SETTING);
  constexpr uint64_t kKey = 0xABCDEF0011223344ull;
  for (int i = 0; i < 8; ++i) set[64 + i] = static_cast<uint8_t>(kKey >> (56 - 8 * i));
  set[64 + 34] = 0x80;  // M_KeyProtectBits 2, LMC 0
  ASSERT_EQ(mad.Call(1, set, &r), Status::SUCCESS);
  EXPECT_EQ(r[4] << 8 | r[5], 0);
  EXPECT_EQ(mad.Call(1, Smp(0x01, 0x0015, 0x1), &r), Status::INVALID_PERMISSION);
  EXPECT_EQ(mad.Call(1, Smp(0x01, 0x0015, kKey), &r), Status::SUCCESS);
  EXPECT_EQ(r[64 + 44] << 8 | r[64 + 45], 1);  // M_KeyViolations
}

}  // namespace
}  // namespace softib::testing
