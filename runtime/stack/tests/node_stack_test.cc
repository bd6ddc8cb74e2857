// Booting and shutting down nodes: the default node, several nodes in one process, CAs
// added and removed at run time (with the bus driver's PDOs), a failed boot leaving
// nothing behind.
#include "softib/stack/node_stack.h"

#include <endian.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <array>
#include <atomic>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "kernel/hca/ci_irp.h"
#include "kernel/verbs_ca_direct.h"
#include "softib/al/access_layer.h"
#include "softib/bus/bus_driver.h"
#include "softib/kernel/device.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/pnp.h"
#include "softib/mad/mad_sm.h"

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

// The identity a PDO answers to kIoctlBusQueryIdentity, or nullopt when no such device.
std::optional<bus::PdoIdentity> PdoIdentityOf(kernel::Node* node, const std::string& name) {
  kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(node, name.c_str());
  if (pdo == nullptr) return std::nullopt;
  bus::PdoIdentity identity{};
  std::memset(&identity, 0xEE, sizeof identity);
  kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
      bus::kIoctlBusQueryIdentity, pdo, nullptr, 0, &identity, sizeof identity, true);
  const Status status = kernel::IoCallDriverAndWait(pdo, irp);
  kernel::ObDereferenceObject(pdo);
  EXPECT_EQ(status, Status::SUCCESS) << name;
  return identity;
}

// Every PDO the bus must have made for a CA with `ports` ports answers with its identity.
void ExpectPdosOf(kernel::Node* node, uint64_t guid, uint8_t ports) {
  for (uint8_t port = 1; port <= ports; ++port) {
    const auto identity = PdoIdentityOf(node, bus::IpoibPdoName(guid, port));
    ASSERT_TRUE(identity.has_value()) << bus::IpoibPdoName(guid, port);
    EXPECT_EQ(identity->kind, bus::PdoKind::kIpoibPort);
    EXPECT_EQ(identity->port, port);
    EXPECT_EQ(identity->ca_guid, guid);
  }
  EXPECT_FALSE(PdoIdentityOf(node, bus::IpoibPdoName(guid, ports + 1)).has_value());
  const auto iou = PdoIdentityOf(node, bus::IouPdoName(guid));
  ASSERT_TRUE(iou.has_value()) << bus::IouPdoName(guid);
  EXPECT_EQ(iou->kind, bus::PdoKind::kIou);
  EXPECT_EQ(iou->port, 0);
  EXPECT_EQ(iou->ca_guid, guid);
}

void ExpectNoPdosOf(kernel::Node* node, uint64_t guid, uint8_t ports) {
  for (uint8_t port = 1; port <= ports; ++port) {
    EXPECT_FALSE(PdoIdentityOf(node, bus::IpoibPdoName(guid, port)).has_value());
  }
  EXPECT_FALSE(PdoIdentityOf(node, bus::IouPdoName(guid)).has_value());
}

// Whether a CI IRP (idl/ci.idl) to each CA of a node booted with SOFTIB_CI_PEND = `pend`
// (null: unset) pended.
std::vector<bool> CiQueryPended(const char* pend) {
  if (pend != nullptr) {
    setenv("SOFTIB_CI_PEND", pend, 1);
  } else {
    unsetenv("SOFTIB_CI_PEND");
  }
  Status status;
  auto node = NodeStack::Boot({}, &status);
  unsetenv("SOFTIB_CI_PEND");
  EXPECT_EQ(status, Status::SUCCESS);
  std::vector<bool> pended;
  if (!node) return pended;
  for (const uint64_t guid : node->ca_guids()) {
    kernel::DeviceObject* device =
        kernel::IoGetDeviceByName(node->node(), node->ca_device_name(guid).c_str());
    EXPECT_NE(device, nullptr);
    if (device == nullptr) continue;
    struct Seen {
      kernel::KEvent done{kernel::EventType::kNotification};
      Status status = Status::PENDING;
      bool pended = false;
    } seen;
    std::vector<uint8_t> out(sizeof(abi::CiQueryCaOut) + sizeof(abi::PortAttributes));
    const auto routine = [](kernel::DeviceObject*, kernel::Irp* irp, void* context) {
      auto* s = static_cast<Seen*>(context);
      s->status = irp->IoStatus.Status;
      s->pended = irp->PendingReturned;
      // Claimed back and freed here: the I/O manager would copy the output into `out` after
      // this routine returns, racing the woken thread that frees `out` (a pended IRP
      // completes on the DPC thread).
      kernel::IoFreeIrp(irp);
      s->done.Set();
      return kernel::CompletionAction::kMoreProcessingRequired;
    };
    kernel::SendCiQueryCaIrp(device, nullptr, kernel::ProcessorMode::kKernelMode, out.data(),
                             static_cast<uint32_t>(out.size()), routine, &seen);
    EXPECT_EQ(kernel::KeWaitForSingleObject(&seen.done, std::chrono::seconds(10)), Status::SUCCESS);
    EXPECT_EQ(seen.status, Status::SUCCESS);
    pended.push_back(seen.pended);
    kernel::ObDereferenceObject(device);
  }
  return pended;
}

TEST(NodeStack, SoftibCiPendPutsEveryCaInPendMode) {
  EXPECT_EQ(CiQueryPended("1"), (std::vector<bool>{true, true}));
  EXPECT_EQ(CiQueryPended(nullptr), (std::vector<bool>{false, false}));
  EXPECT_EQ(CiQueryPended("0"), (std::vector<bool>{false, false}));
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

// A port's (NodeGUID, PortGUID) as its SMA answers SubnGet(NodeInfo) on it.
std::pair<uint64_t, uint64_t> NodeInfoGuids(NodeStack& node, uint64_t ca, uint8_t port) {
  std::array<uint8_t, 256> request{}, response{};
  request[0] = 1;
  request[1] = 0x01;  // LID-routed subnet management
  request[2] = 1;
  request[3] = 0x01;   // Get
  request[17] = 0x11;  // NodeInfo
  EXPECT_EQ(node.LocalMad(ca, port, request, response), Status::SUCCESS);
  mad::NodeInfo info{};
  EXPECT_TRUE(info.Unpack(std::span<const uint8_t>(response.data() + 64, mad::NodeInfo::kSize)));
  return {info.NodeGUID, info.PortGUID};
}

// Derived GUIDs (CaConfig::node_guid 0) of multi-port CAs, at boot and added at run time: no
// node or port GUID equals another (the AL, the SA and IPoIB find a port by its GUID).
TEST(NodeStack, DerivedGuidsOfMultiPortCasNeverCollide) {
  Status status;
  NodeConfig config;
  config.name = "guids";
  config.cas = {CaConfig{0, 2}, CaConfig{0, 2}, CaConfig{0, 1}};
  auto node = NodeStack::Boot(config, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  uint64_t added = 0;
  ASSERT_EQ(node->AddCa(CaConfig{0, 3}, &added), Status::SUCCESS);
  const std::vector<uint8_t> ports = {2, 2, 1, 3};
  const auto cas = node->ca_guids();
  ASSERT_EQ(cas.size(), ports.size());
  EXPECT_EQ(cas[3], added);
  std::set<uint64_t> seen;
  for (size_t n = 0; n < cas.size(); ++n) {
    EXPECT_TRUE(seen.insert(cas[n]).second) << "node GUID " << std::hex << cas[n];
    for (uint8_t port = 1; port <= ports[n]; ++port) {
      const auto [node_guid, port_guid] = NodeInfoGuids(*node, cas[n], port);
      EXPECT_EQ(node_guid, cas[n]);
      EXPECT_TRUE(seen.insert(port_guid).second)
          << "CA " << n << " port " << int{port} << ": GUID " << std::hex << port_guid;
    }
  }
  EXPECT_EQ(seen.size(), 4u + 8u);
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

TEST(NodeStack, TheBusEnumeratesEachCasPortPdosAndIouPdoAtBoot) {
  Status status;
  NodeConfig config;
  config.cas = {CaConfig{0x5001, 2}, CaConfig{0x5002, 1}};
  auto node = NodeStack::Boot(config, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  ASSERT_NE(node->bus(), nullptr);
  ExpectPdosOf(node->node(), 0x5001, 2);
  ExpectPdosOf(node->node(), 0x5002, 1);
  EXPECT_EQ(bus::BusPdoCount(node->bus()), 5u);  // 2 + 1 port PDOs, 2 IOU PDOs
}

TEST(NodeStack, PdosFollowCasAddedAndRemovedAtRunTime) {
  Status status;
  auto node = NodeStack::Boot({}, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  const auto guids = node->ca_guids();
  ASSERT_EQ(bus::BusPdoCount(node->bus()), 4u);

  uint64_t added = 0;
  ASSERT_EQ(node->AddCa(CaConfig{0xFEED01, 2}, &added), Status::SUCCESS);
  ExpectPdosOf(node->node(), 0xFEED01, 2);
  EXPECT_EQ(bus::BusPdoCount(node->bus()), 7u);

  ASSERT_EQ(node->RemoveCa(guids[0]), Status::SUCCESS);
  ExpectNoPdosOf(node->node(), guids[0], 1);
  ExpectPdosOf(node->node(), guids[1], 1);  // the other CAs keep theirs
  ExpectPdosOf(node->node(), 0xFEED01, 2);
  EXPECT_EQ(bus::BusPdoCount(node->bus()), 5u);

  ASSERT_EQ(node->RemoveCa(0xFEED01), Status::SUCCESS);
  ExpectNoPdosOf(node->node(), 0xFEED01, 2);
  EXPECT_EQ(bus::BusPdoCount(node->bus()), 2u);
}

// A ULP-like listener on the IPoIB PDO class that, at each arrival, asks the AL whether it
// already knows the PDO's CA: the HCA driver started first, so the CA is there to ask about
// (through its CI) before any PDO of it exists.
TEST(NodeStack, PdosOfACaAddedAtRunTimeArriveAfterItsCaDevice) {
  Status status;
  auto node = NodeStack::Boot({}, &status);
  ASSERT_EQ(status, Status::SUCCESS);
  struct Seen {
    kernel::Node* node;
    std::atomic<int> arrivals{0};
    std::atomic<int> with_ca_device{0};
  } seen{node->node()};
  kernel::PnpRegistration* registration = nullptr;
  ASSERT_EQ(kernel::IoRegisterPlugPlayNotification(
                node->node(), bus::kIpoibInterfaceClass, false,
                [](const kernel::PnpNotification& n, void* context) {
                  auto* self = static_cast<Seen*>(context);
                  if (n.event != kernel::PnpEvent::kArrival) return;
                  self->arrivals.fetch_add(1);
                  kernel::DeviceObject* ca =
                      kernel::IoGetDeviceByName(self->node, "hca-0000000000feed02");
                  if (ca != nullptr) {
                    self->with_ca_device.fetch_add(1);
                    kernel::ObDereferenceObject(ca);
                  }
                },
                &seen, &registration),
            Status::SUCCESS);
  uint64_t added = 0;
  ASSERT_EQ(node->AddCa(CaConfig{0xFEED02, 2}, &added), Status::SUCCESS);
  // The listener hears of the PDOs on the PnP workers, after the bus made them: a bounded
  // wait (10 s means a lost notification, not a slow machine).
  for (int i = 0; i < 10000 && seen.arrivals.load() < 2; ++i) {
    kernel::KeDelayExecutionThread(std::chrono::milliseconds(1));
  }
  kernel::IoUnregisterPlugPlayNotification(registration);
  EXPECT_EQ(seen.arrivals.load(), 2);
  EXPECT_EQ(seen.with_ca_device.load(), 2);
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
