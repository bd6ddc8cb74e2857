// The AL's own uses of the CI as IRPs (issue 17), with the HCA completing inline and in its
// pend mode (every CI IRP completed later from its DPC): the port attribute cache is filled
// at the CA's arrival and refreshed before a port event is announced (a client that hears
// LID_CHANGE finds the new LID in it), and QP0/QP1 came up through their IRP chains.
#include <cstdlib>

#include "kernel_client.h"
#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/special_qp.h"

namespace softib::testing {
namespace {

// SOFTIB_CI_PEND for one boot (the node stack reads it when it adds a CA).
class PendMode {
 public:
  explicit PendMode(bool pend) {
    if (const char* old = std::getenv("SOFTIB_CI_PEND")) saved_ = old;
    setenv("SOFTIB_CI_PEND", pend ? "1" : "0", 1);
  }
  ~PendMode() {
    if (saved_.empty()) {
      unsetenv("SOFTIB_CI_PEND");
    } else {
      setenv("SOFTIB_CI_PEND", saved_.c_str(), 1);
    }
  }

 private:
  std::string saved_;
};

class AlCiIrps : public ::testing::TestWithParam<bool> {};

TEST_P(AlCiIrps, ThePortCacheIsFilledAtArrivalAndRefreshedBeforeALidChangeIsAnnounced) {
  std::unique_ptr<stack::NodeStack> node;
  {
    PendMode pend(GetParam());
    node = BootDefault(GetParam() ? "cache-pend" : "cache-inline");
  }
  ASSERT_TRUE(node);
  const uint64_t guid = node->ca_guids()[0];
  Client client(node->node());
  abi::OpenCaOut open{};
  ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(guid), 0x11}, &open), Status::SUCCESS);
  abi::QueryCaOut query{};
  std::vector<abi::PortAttributes> ports;
  ASSERT_EQ(client.QueryCa(open.ca.value, &query, &ports), Status::SUCCESS);
  ASSERT_FALSE(ports.empty());
  std::shared_ptr<al::AlCa> ca = node->access_layer()->FindCa(guid);
  ASSERT_TRUE(ca);

  // As the CA reported them at arrival: attributes, P_Key table, GID table.
  abi::PortAttributes cached{};
  ASSERT_TRUE(ca->CachedPortAttributes(1, &cached));
  EXPECT_EQ(cached.port_guid, ports[0].port_guid);
  EXPECT_EQ(cached.lid, ports[0].lid);
  EXPECT_EQ(cached.link_state, 4);
  EXPECT_FALSE(ca->CachedPortAttributes(2, &cached));  // no such port
  std::vector<uint16_t> pkeys;
  ASSERT_TRUE(ca->CachedPkeyTable(1, &pkeys));
  ASSERT_EQ(pkeys.size(), ports[0].num_pkeys);
  EXPECT_EQ(pkeys[0], 0xFFFF);  // the default partition, full member
  {
    kernel::SpinLockGuard guard(ca->lock);
    ASSERT_EQ(ca->cached_ports.size(), 1u);
    ASSERT_EQ(ca->cached_ports[0].gids.size(), ports[0].num_gids);
    uint64_t interface_id = 0;  // GID 0: the subnet prefix and the port GUID
    std::memcpy(&interface_id, ca->cached_ports[0].gids[0].raw + 8, 8);
    EXPECT_EQ(interface_id, ports[0].port_guid);  // both network order
    EXPECT_EQ(ca->cached_ca.num_ports, 1u);
  }

  // SubnSet(PortInfo) with a new LID: the SMA reports LID_CHANGE; when the client hears
  // it, the cache holds the new LID already (no wait, no poll).
  abi::LocalMadIn in{};
  in.ca.value = open.ca.value;
  in.port_num = 1;
  in.request[0] = 1;
  in.request[1] = 0x01;
  in.request[2] = 1;
  in.request[3] = 0x01;   // Get
  in.request[17] = 0x15;  // PortInfo
  abi::LocalMadOut got{};
  ASSERT_EQ(kernel::IbLocalMad(client.al(), in, got), Status::SUCCESS);
  in.request[3] = 0x02;  // Set
  std::memcpy(in.request + 64, got.response + 64, 64);
  in.request[64 + 16] = 0x02;  // LID 0x0234
  in.request[64 + 17] = 0x34;
  in.request[64 + 32] &= 0xF0;  // PortState, PortPhysicalState: no change
  in.request[64 + 33] &= 0x0F;
  ASSERT_EQ(kernel::IbLocalMad(client.al(), in, got), Status::SUCCESS);
  const abi::AsyncEventRecord event = NextAsync(client, client.al_handle());
  EXPECT_EQ(event.code, abi::AsyncEventType::LID_CHANGE);
  EXPECT_EQ(event.port_num, 1);
  ASSERT_TRUE(ca->CachedPortAttributes(1, &cached));
  EXPECT_EQ(cached.lid, 0x0234);

  // The CA leaves: its PORT_REMOVE still carries the port's GUID and last attributes (from
  // the cache, the CA being gone), and the cache answers nothing for a removed CA.
  abi::RegisterPnpOut reg{};
  ASSERT_EQ(client.RegisterPnp(
                {{client.al_handle()}, abi::PnpClass::PORT, abi::PnpRegFlags{}, 0x22}, &reg),
            Status::SUCCESS);
  for (;;) {
    if (NextPnp(client, reg.reg.value).event == abi::PnpEvent::REG_COMPLETE) break;
  }
  ASSERT_EQ(node->RemoveCa(guid), Status::SUCCESS);
  abi::PnpEventRecord removed{};
  for (int i = 0; i < 8 && removed.event != abi::PnpEvent::PORT_REMOVE; ++i) {
    removed = NextPnp(client, reg.reg.value);
  }
  ASSERT_EQ(removed.event, abi::PnpEvent::PORT_REMOVE);
  EXPECT_EQ(removed.guid, ports[0].port_guid);
  EXPECT_EQ(removed.port.lid, 0x0234);
  EXPECT_FALSE(ca->CachedPortAttributes(1, &cached));
}

TEST_P(AlCiIrps, QpZeroAndOneOfEveryPortCameUpThroughTheirIrpChains) {
  std::unique_ptr<stack::NodeStack> node;
  {
    PendMode pend(GetParam());
    node = BootDefault(GetParam() ? "sqp-pend" : "sqp-inline");
  }
  ASSERT_TRUE(node);
  for (uint64_t guid : node->ca_guids()) {
    std::shared_ptr<al::AlCa> ca = node->access_layer()->FindCa(guid);
    ASSERT_TRUE(ca);
    ASSERT_EQ(ca->special_qps.size(), 2u);  // one port: QP0, QP1
    ASSERT_EQ(ca->special_qp_status.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(ca->special_qp_status[i], Status::SUCCESS) << i;
      EXPECT_EQ(ca->special_qps[i]->port(), 1);
      EXPECT_EQ(ca->special_qps[i]->smi(), i == 0);
      EXPECT_NE(ca->special_qps[i]->cq(), 0u);
    }
  }
  // The CAs leave with the node: their QPs' release IRPs complete before the stack goes
  // (a leak or a wait that never ends would fail or hang the node's shutdown).
  node.reset();
}

INSTANTIATE_TEST_SUITE_P(InlineAndPended, AlCiIrps, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Pended" : "Inline"; });

}  // namespace
}  // namespace softib::testing
