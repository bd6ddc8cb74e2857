// Booting and shutting down nodes: the default node, several nodes in one process, CAs
// added and removed at run time, a failed boot leaving nothing behind.
#include "softib/stack/node_stack.h"

#include <endian.h>
#include <gtest/gtest.h>

#include "kernel/verbs_ca_direct.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/device.h"
#include "softib/kernel/io.h"

namespace softib::stack {
namespace {

using kernel::Status;

std::vector<uint64_t> AlCaGuids(kernel::Node* node) {
  kernel::IbAl* al = nullptr;
  EXPECT_EQ(kernel::IbOpenAl(node, nullptr, &al), Status::SUCCESS);
  std::vector<uint64_t> guids(abi::kMaxCas);
  abi::GetCaGuidsOut out{};
  EXPECT_EQ(kernel::IbGetCaGuids(al, {{kernel::IbGetAlHandle(al)}}, out, guids), Status::SUCCESS);
  kernel::IbReleaseAl(al);
  guids.resize(out.num_cas);
  for (auto& g : guids) g = be64toh(g);
  return guids;
}

TEST(NodeStack, DefaultNodeHasTwoCasWithDevicesAndTheAlDevice) {
  Status status;
  auto node = NodeStack::Boot({}, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  ASSERT_TRUE(node);
  const auto guids = node->ca_guids();
  ASSERT_EQ(guids.size(), 2u);
  EXPECT_NE(guids[0], guids[1]);
  EXPECT_EQ(AlCaGuids(node->node()), guids);
  for (const uint64_t guid : guids) {
    kernel::DeviceObject* device =
        kernel::IoGetDeviceByName(node->node(), node->ca_device_name(guid).c_str());
    ASSERT_NE(device, nullptr);
    kernel::ObDereferenceObject(device);
  }
  kernel::DeviceObject* al = kernel::IoGetDeviceByName(node->node(), al::kAlDeviceName);
  ASSERT_NE(al, nullptr);
  kernel::ObDereferenceObject(al);
}

TEST(NodeStack, SeveralNodesLiveInOneProcessWithDistinctGuids) {
  Status status;
  NodeConfig a_config;
  a_config.name = "alpha";
  NodeConfig b_config;
  b_config.name = "beta";
  b_config.cas = {CaConfig{0x1111, 1}, CaConfig{0x2222, 1}, CaConfig{0x3333, 1},
                  CaConfig{0x4444, 1}};
  auto a = NodeStack::Boot(a_config, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  auto b = NodeStack::Boot(b_config, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  EXPECT_EQ(b->ca_guids(), (std::vector<uint64_t>{0x1111, 0x2222, 0x3333, 0x4444}));
  EXPECT_EQ(AlCaGuids(b->node()).size(), 4u);
  EXPECT_EQ(AlCaGuids(a->node()).size(), 2u);
  EXPECT_EQ(b->ca_device_name(0x1111), "hca-0000000000001111");
  a.reset();
  EXPECT_EQ(AlCaGuids(b->node()).size(), 4u);
}

TEST(NodeStack, CasComeAndGoAtRunTime) {
  Status status;
  auto node = NodeStack::Boot({}, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  const auto guids = node->ca_guids();
  ASSERT_EQ(node->RemoveCa(guids[1]), Status::SUCCESS);
  EXPECT_EQ(node->RemoveCa(guids[1]), Status::INVALID_GUID);
  EXPECT_EQ(AlCaGuids(node->node()), std::vector<uint64_t>{guids[0]});
  EXPECT_EQ(kernel::IoGetDeviceByName(node->node(), node->ca_device_name(guids[1]).c_str()),
            nullptr);
  uint64_t added = 0;
  ASSERT_EQ(node->AddCa(CaConfig{0xABCDEF, 2}, &added), Status::SUCCESS);
  EXPECT_EQ(added, 0xABCDEFu);
  EXPECT_EQ(AlCaGuids(node->node()), (std::vector<uint64_t>{guids[0], 0xABCDEF}));
  EXPECT_EQ(node->AddCa(CaConfig{0xABCDEF, 1}, &added), Status::RESOURCE_BUSY);
}

TEST(NodeStack, ABootThatFailsLeavesNothing) {
  Status status;
  NodeConfig config;
  config.cas = {CaConfig{0x77, 1}, CaConfig{0x77, 1}};  // the same GUID twice
  auto node = NodeStack::Boot(config, &status);
  EXPECT_EQ(node, nullptr);
  EXPECT_EQ(status, Status::RESOURCE_BUSY);
}

}  // namespace
}  // namespace softib::stack
