// CA and port attributes (QueryCa / QueryGidTable / QueryPkeyTable) and ModifyCa.
#include <endian.h>
#include <gtest/gtest.h>

#include <array>

#include "hca/device/hca.h"

namespace softib::hca {
namespace {

using abi::Status;

TEST(Attributes, CaReportsTheLimitsItEnforces) {
  HcaConfig config;
  config.num_ports = 2;
  Hca hca(config);
  const abi::CaAttributes a = hca.QueryCa();
  EXPECT_EQ(be64toh(a.ca_guid), config.node_guid);
  EXPECT_EQ(be64toh(a.system_image_guid), config.node_guid);  // none configured
  EXPECT_EQ(a.vendor_id, 0x02C9u);
  EXPECT_EQ(a.num_ports, 2);
  EXPECT_EQ(a.max_qps, 131000u);
  EXPECT_EQ(a.max_wrs, 16384u);
  EXPECT_EQ(a.max_sges, 16u);
  EXPECT_EQ(a.max_cqs, 65408u);
  EXPECT_EQ(a.max_cqes, 65536u);
  EXPECT_EQ(a.max_mrs, 524032u);
  EXPECT_EQ(a.max_srqs, 65472u);
  EXPECT_EQ(a.max_srq_wrs, 16383u);
  EXPECT_EQ(a.max_inline_data, 256u);
  EXPECT_EQ(a.max_qp_resp_res, 16u);
  EXPECT_EQ(a.max_qp_init_depth, 128u);
  EXPECT_EQ(a.max_mcast_grps, 8192u);
  EXPECT_EQ(a.max_qps_per_mcast_grp, 248u);
  EXPECT_EQ(a.max_partitions, 128u);
  EXPECT_EQ(a.atomicity, abi::AtomicCap::LOCAL);
  EXPECT_TRUE(abi::HasAny(a.capabilities, abi::CaCapabilities::MW_TYPE2));
  EXPECT_TRUE(abi::HasAny(a.capabilities, abi::CaCapabilities::MODIFY_SRQ_DEPTH));
  EXPECT_TRUE(abi::IsValid(a));  // pads zero, enums declared
}

TEST(Attributes, LimitsAreEnforced) {
  HcaConfig config;
  config.max_qps = 2;
  config.max_cqs = 1;
  config.max_srqs = 1;
  Hca hca(config);
  const PdId pd = hca.AllocPd();
  uint32_t cq, cq2, srq, srq2, qp;
  ASSERT_EQ(hca.CreateCq(4, &cq), Status::SUCCESS);
  EXPECT_EQ(hca.CreateCq(4, &cq2), Status::INSUFFICIENT_RESOURCES);
  EXPECT_EQ(hca.CreateCq(config.max_cqes + 1, &cq2), Status::INVALID_CQ_SIZE);
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::UD;
  params.caps = {4, 4, 1, 1, 0, 0};
  ASSERT_EQ(hca.CreateQp(pd, params, cq, cq, &qp), Status::SUCCESS);
  ASSERT_EQ(hca.CreateQp(pd, params, cq, cq, &qp), Status::SUCCESS);
  EXPECT_EQ(hca.CreateQp(pd, params, cq, cq, &qp), Status::INSUFFICIENT_RESOURCES);
  ASSERT_EQ(hca.CreateSrq(pd, {4, 1, 0, 0}, &srq, nullptr), Status::SUCCESS);
  EXPECT_EQ(hca.CreateSrq(pd, {4, 1, 0, 0}, &srq2, nullptr), Status::INSUFFICIENT_RESOURCES);
}

TEST(Attributes, RdmaReadDepthsAreBoundedByTheDevice) {
  using M = abi::QpAttrMask;
  Hca hca;
  const PdId pd = hca.AllocPd();
  uint32_t cq = 0, qp = 0;
  ASSERT_EQ(hca.CreateCq(4, &cq), Status::SUCCESS);
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::RC;
  params.caps = {4, 4, 1, 1, 0, 0};
  ASSERT_EQ(hca.CreateQp(pd, params, cq, cq, &qp), Status::SUCCESS);
  abi::QpModifyAttributes a{};
  a.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
  a.state = abi::QpState::INIT;
  a.port_num = 1;
  ASSERT_EQ(hca.ModifyQp(qp, a), Status::SUCCESS);
  a = {};
  a.mask = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC |
           M::MIN_RNR_TIMER;
  a.state = abi::QpState::RTR;
  a.av.port_num = 1;
  a.av.dlid = 5;
  a.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_2048);
  a.max_dest_rd_atomic = 17;  // responder resources: 16
  EXPECT_EQ(hca.ModifyQp(qp, a), Status::INVALID_SETTING);
  a.max_dest_rd_atomic = 16;
  ASSERT_EQ(hca.ModifyQp(qp, a), Status::SUCCESS);
  a = {};
  a.mask = M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_COUNT | M::RNR_RETRY | M::MAX_RD_ATOMIC;
  a.state = abi::QpState::RTS;
  a.max_rd_atomic = 129;  // initiator depth: 128
  EXPECT_EQ(hca.ModifyQp(qp, a), Status::INVALID_SETTING);
  a.max_rd_atomic = 128;
  EXPECT_EQ(hca.ModifyQp(qp, a), Status::SUCCESS);
}

TEST(Attributes, PortReportsStateAddressesAndLink) {
  Hca hca;
  BackToBackCable cable;
  abi::PortAttributes p{};
  EXPECT_EQ(hca.QueryPort(0, &p), Status::INVALID_PORT);
  EXPECT_EQ(hca.QueryPort(2, &p), Status::INVALID_PORT);
  ASSERT_EQ(hca.QueryPort(1, &p), Status::SUCCESS);
  EXPECT_EQ(p.link_state, 1);  // Down: no cable
  EXPECT_EQ(p.phys_state, 2);  // Polling
  hca.port(1).link = &cable.end(0);
  ASSERT_EQ(hca.QueryPort(1, &p), Status::SUCCESS);
  EXPECT_EQ(p.link_state, 2);  // Init: no LID yet
  hca.port(1).lid = 0x11;
  hca.port(1).lmc = 2;
  ASSERT_EQ(hca.QueryPort(1, &p), Status::SUCCESS);
  EXPECT_EQ(p.link_state, 4);  // Active
  EXPECT_EQ(p.phys_state, 5);  // LinkUp
  EXPECT_EQ(p.lid, 0x11);
  EXPECT_EQ(p.lmc, 2);
  EXPECT_EQ(be64toh(p.port_guid), hca.config().node_guid + 1);
  EXPECT_EQ(be64toh(p.subnet_prefix), 0xFE80000000000000ull);
  EXPECT_EQ(p.active_mtu, abi::PathMtu::MTU_4096);
  EXPECT_EQ(p.max_mtu, abi::PathMtu::MTU_4096);
  EXPECT_EQ(p.active_width, 2);  // 4x
  EXPECT_EQ(p.active_speed, 4);  // QDR
  EXPECT_EQ(p.num_gids, 128);
  EXPECT_EQ(p.num_pkeys, 128);
  EXPECT_EQ(p.max_msg_size, 1u << 31);
  EXPECT_TRUE(abi::HasAny(p.capabilities, abi::PortCapabilities::COMMUNICATION_MANAGEMENT));
  EXPECT_FALSE(abi::HasAny(p.capabilities, abi::PortCapabilities::IS_SM));
  EXPECT_TRUE(abi::IsValid(p));
}

TEST(Attributes, GidZeroIsLinkLocalPrefixAndPortGuid) {
  HcaConfig config;
  config.num_ports = 2;
  config.node_guid = 0x0002C90300ABCDE0ull;
  Hca hca(config);
  std::array<abi::Gid, 4> gids{};
  uint32_t n = 99;
  ASSERT_EQ(hca.QueryGidTable(2, 0, gids, &n), Status::SUCCESS);
  EXPECT_EQ(n, 4u);
  const std::array<uint8_t, 16> expected = {0xFE, 0x80, 0,    0,    0,    0,    0,    0,
                                            0x00, 0x02, 0xC9, 0x03, 0x00, 0xAB, 0xCD, 0xE2};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(gids[0].raw[i], expected[i]) << i;
  for (int i = 0; i < 16; ++i) EXPECT_EQ(gids[1].raw[i], 0) << i;  // unset entries
  ASSERT_EQ(hca.QueryGidTable(1, 126, gids, &n), Status::SUCCESS);
  EXPECT_EQ(n, 2u);  // the table ends at 128
  EXPECT_EQ(hca.QueryGidTable(1, 128, gids, &n), Status::INVALID_INDEX);
  EXPECT_EQ(hca.QueryGidTable(3, 0, gids, &n), Status::INVALID_PORT);
}

TEST(Attributes, PkeyTableHasTheDefaultPartitionAtIndexZero) {
  Hca hca;
  std::array<uint16_t, 200> pkeys{};
  uint32_t n = 0;
  ASSERT_EQ(hca.QueryPkeyTable(1, 0, pkeys, &n), Status::SUCCESS);
  ASSERT_EQ(n, 128u);
  EXPECT_EQ(pkeys[0], htobe16(0xFFFF));
  EXPECT_EQ(pkeys[1], 0);
  hca.port(1).pkeys[3] = 0x8001;
  ASSERT_EQ(hca.QueryPkeyTable(1, 3, std::span(pkeys).first(1), &n), Status::SUCCESS);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(pkeys[0], htobe16(0x8001));  // network order
  EXPECT_EQ(hca.QueryPkeyTable(1, 128, pkeys, &n), Status::INVALID_INDEX);
  EXPECT_EQ(hca.QueryPkeyTable(0, 0, pkeys, &n), Status::INVALID_PORT);
}

TEST(Attributes, ModifyCaChangesCapabilitiesCountersAndShutsPortsDown) {
  using F = abi::ModifyCaFlags;
  using C = abi::PortCapabilities;
  Hca hca;
  BackToBackCable cable;
  hca.port(1).link = &cable.end(0);
  hca.port(1).lid = 1;
  hca.port(1).counters.pkey_violations = 7;
  hca.port(1).counters.qkey_violations = 9;
  abi::PortAttributes p{};
  struct Case {
    uint8_t port;
    F flags;
    C set, clear;
    Status expected;
  };
  const Case cases[] = {
      {2, F::PORT_CAPABILITIES, C::DEVICE_MANAGEMENT, C{}, Status::INVALID_PORT},
      {1, F::PORT_CAPABILITIES, C::IS_SM, C::IS_SM, Status::SUCCESS},  // set and cleared: no change
      {1, static_cast<F>(0x40), C{}, C{}, Status::INVALID_SETTING},
      {1, F::PORT_CAPABILITIES, static_cast<C>(0x1), C{}, Status::INVALID_SETTING},
      {2, F::SYSTEM_IMAGE_GUID, C{}, C{}, Status::SUCCESS},  // not a port change
      {1, F::PORT_CAPABILITIES, C::DEVICE_MANAGEMENT, C::VENDOR_CLASS, Status::SUCCESS},
  };
  for (const Case& c : cases)
    EXPECT_EQ(hca.ModifyCa(c.port, c.flags, c.set, c.clear, 0, htobe64(0x1122)), c.expected);
  EXPECT_EQ(be64toh(hca.QueryCa().system_image_guid), 0x1122u);
  ASSERT_EQ(hca.QueryPort(1, &p), Status::SUCCESS);
  EXPECT_TRUE(abi::HasAny(p.capabilities, C::DEVICE_MANAGEMENT));
  EXPECT_FALSE(abi::HasAny(p.capabilities, C::VENDOR_CLASS));
  EXPECT_EQ(p.pkey_violations, 7);
  ASSERT_EQ(hca.ModifyCa(1, F::RESET_PKEY_COUNTER | F::INIT_TYPE, {}, {}, 0x5, 0), Status::SUCCESS);
  ASSERT_EQ(hca.QueryPort(1, &p), Status::SUCCESS);
  EXPECT_EQ(p.pkey_violations, 0);
  EXPECT_EQ(p.qkey_violations, 9);
  EXPECT_EQ(p.init_type_reply, 0x5);
  EXPECT_EQ(p.link_state, 4);
  ASSERT_EQ(hca.ModifyCa(1, F::SHUTDOWN_PORT, {}, {}, 0, 0), Status::SUCCESS);
  ASSERT_EQ(hca.QueryPort(1, &p), Status::SUCCESS);
  EXPECT_EQ(p.link_state, 1);  // Down
  EXPECT_EQ(p.phys_state, 3);  // Disabled
}

}  // namespace
}  // namespace softib::hca
