// The bus driver on a node with the real HCA driver: CA arrival enumerates one IPoIB PDO per
// port and one IOU PDO, each announced to ULP drivers by its interface class; CA removal
// sends REMOVE down every PDO stack (function drivers first) and announces the removals.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "softib/bus/bus_driver.h"
#include "softib/hca/hca_driver.h"
#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/node.h"
#include "softib/kernel/pnp.h"
#include "test_driver.h"

namespace softib::bus {
namespace {

using kernel::Status;
using namespace std::chrono_literals;

constexpr uint64_t kGuidA = 0x0002c90300a0b001ull;
constexpr uint64_t kGuidB = 0x0002c90300a0b002ull;

// Bounded wait for an asynchronous PnP outcome (no timing assertion: 10 s is a hang).
template <typename Predicate>
bool WaitFor(Predicate predicate) {
  for (int i = 0; i < 10000; ++i) {
    if (predicate()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return predicate();
}

// A ULP driver listening for one PDO class: records the device names it heard of.
struct UlpListener {
  std::mutex mutex;
  std::multiset<std::string> arrived, removed;
  kernel::PnpRegistration* registration = nullptr;

  UlpListener(kernel::Node& node, const char* interface_class) {
    EXPECT_EQ(kernel::IoRegisterPlugPlayNotification(&node, interface_class, true, &Callback, this,
                                                     &registration),
              Status::SUCCESS);
  }
  ~UlpListener() { kernel::IoUnregisterPlugPlayNotification(registration); }

  static void Callback(const kernel::PnpNotification& n, void* context) {
    auto* self = static_cast<UlpListener*>(context);
    PdoIdentity identity{};
    kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
        kIoctlBusQueryIdentity, n.device, nullptr, 0, &identity, sizeof identity, true);
    const bool ok = kernel::IoCallDriverAndWait(n.device, irp) == Status::SUCCESS;
    const std::string name = !ok ? "?"
                             : identity.kind == PdoKind::kIou
                                 ? IouPdoName(identity.ca_guid)
                                 : IpoibPdoName(identity.ca_guid, identity.port);
    std::lock_guard lock(self->mutex);
    (n.event == kernel::PnpEvent::kArrival ? self->arrived : self->removed).insert(name);
  }
  size_t Arrived() {
    std::lock_guard lock(mutex);
    return arrived.size();
  }
  size_t Removed() {
    std::lock_guard lock(mutex);
    return removed.size();
  }
};

hca::HcaConfig Ca(uint64_t guid, uint8_t ports) {
  hca::HcaConfig config;
  config.node_guid = guid;
  config.num_ports = ports;
  return config;
}

bool DeviceExists(kernel::Node& node, const std::string& name) {
  kernel::DeviceObject* device = kernel::IoGetDeviceByName(&node, name.c_str());
  if (device == nullptr) return false;
  kernel::ObDereferenceObject(device);
  return true;
}

// The device PDOs forward verb IRPs to (the AL device's role), recording what reaches it.
struct VerbTarget {
  explicit VerbTarget(kernel::Node& node) : driver(node, "verbs") {
    device = driver.CreateDevice("verbs");
    driver.OnIrp(device, [this](kernel::DeviceObject*, kernel::Irp* irp) {
      const kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
      std::lock_guard lock(mutex);
      seen.push_back({location->MajorFunction, location->Parameters.DeviceIoControl.IoControlCode,
                      location->FileObject,
                      irp->AssociatedIrp.SystemBuffer != nullptr
                          ? *static_cast<uint32_t*>(irp->AssociatedIrp.SystemBuffer)
                          : 0u});
      std::memcpy(irp->AssociatedIrp.SystemBuffer, "done", 4);
      return kernel::testing::CompleteIrp(irp, Status::INVALID_QP_HANDLE, 4);
    });
  }
  struct Seen {
    kernel::IrpMajor major;
    uint32_t code;
    kernel::FileObject* file;
    uint32_t input;
    bool operator==(const Seen&) const = default;
  };
  std::vector<Seen> Taken() {
    std::lock_guard lock(mutex);
    return seen;
  }
  kernel::testing::TestDriver driver;
  kernel::DeviceObject* device = nullptr;
  std::mutex mutex;
  std::vector<Seen> seen;
};

// Sends `code` with a 4-byte input to `device` for `file`; the status and the output.
Status SendIoctl(kernel::DeviceObject* device, uint32_t code, bool internal,
                 kernel::FileObject* file, uint32_t input, char (*output)[5]) {
  kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(code, device, &input, sizeof input,
                                                           *output, 4, internal);
  kernel::IoGetNextIrpStackLocation(irp)->FileObject = file;
  return kernel::IoCallDriverAndWait(device, irp);
}

class BusDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(hca::LoadHcaDriver(&node_, &hca_), Status::SUCCESS); }
  void TearDown() override {
    if (bus_ != nullptr) UnloadBusDriver(bus_);
    hca::UnloadHcaDriver(hca_);
  }
  kernel::Node node_;
  hca::HcaDriver* hca_ = nullptr;
  BusDriver* bus_ = nullptr;
};

TEST_F(BusDriverTest, CaArrivalEnumeratesOnePortPdoPerPortAndOneIouPdo) {
  UlpListener ipoib(node_, kIpoibInterfaceClass);
  UlpListener iou(node_, kIouInterfaceClass);
  ASSERT_EQ(LoadBusDriver(&node_, &bus_), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 2), 1), Status::SUCCESS);

  ASSERT_TRUE(WaitFor([&] { return ipoib.Arrived() == 2 && iou.Arrived() == 1; }));
  EXPECT_EQ(BusPdoCount(bus_), 3u);
  EXPECT_EQ(ipoib.arrived,
            (std::multiset<std::string>{"ipoib-0002c90300a0b001-1", "ipoib-0002c90300a0b001-2"}));
  EXPECT_EQ(iou.arrived, (std::multiset<std::string>{"iou-0002c90300a0b001"}));
  EXPECT_TRUE(DeviceExists(node_, "ipoib-0002c90300a0b001-2"));
  EXPECT_FALSE(DeviceExists(node_, "ipoib-0002c90300a0b001-3"));
}

TEST_F(BusDriverTest, CasPresentBeforeTheBusLoadsAreEnumeratedAtLoad) {
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 1), 1), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidB, 1), 2), Status::SUCCESS);
  ASSERT_EQ(LoadBusDriver(&node_, &bus_), Status::SUCCESS);
  ASSERT_TRUE(WaitFor([&] { return BusPdoCount(bus_) == 4; }));
  EXPECT_TRUE(DeviceExists(node_, IpoibPdoName(kGuidB, 1)));
  EXPECT_TRUE(DeviceExists(node_, IouPdoName(kGuidA)));
}

TEST_F(BusDriverTest, CaRemovalRemovesItsPdosOnlyAndAnnouncesEachRemoval) {
  UlpListener ipoib(node_, kIpoibInterfaceClass);
  ASSERT_EQ(LoadBusDriver(&node_, &bus_), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 2), 1), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidB, 1), 3), Status::SUCCESS);
  ASSERT_TRUE(WaitFor([&] { return BusPdoCount(bus_) == 5 && ipoib.Arrived() == 3; }));

  ASSERT_EQ(hca::HcaRemoveCa(hca_, kGuidA), Status::SUCCESS);
  ASSERT_TRUE(WaitFor([&] { return BusPdoCount(bus_) == 2 && ipoib.Removed() == 2; }));
  EXPECT_FALSE(DeviceExists(node_, IpoibPdoName(kGuidA, 1)));
  EXPECT_FALSE(DeviceExists(node_, IouPdoName(kGuidA)));
  EXPECT_TRUE(DeviceExists(node_, IpoibPdoName(kGuidB, 1)));
  // The removal notification still names the PDO (its identity answers during removal).
  EXPECT_EQ(ipoib.removed,
            (std::multiset<std::string>{IpoibPdoName(kGuidA, 1), IpoibPdoName(kGuidA, 2)}));
}

TEST_F(BusDriverTest, AFunctionDriverOverAPdoSeesTheRemoveBeforeThePdoGoes) {
  ASSERT_EQ(LoadBusDriver(&node_, &bus_), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 1), 1), Status::SUCCESS);
  ASSERT_TRUE(WaitFor([&] { return BusPdoCount(bus_) == 2; }));

  // An IPoIB-like function driver attaches over the port PDO.
  kernel::testing::TestDriver ulp(node_, "ulp");
  kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(&node_, IpoibPdoName(kGuidA, 1).c_str());
  ASSERT_NE(pdo, nullptr);
  kernel::DeviceObject* fdo = ulp.CreateDevice();
  kernel::DeviceObject* below = ulp.Attach(fdo, pdo);
  kernel::ObDereferenceObject(pdo);
  std::atomic<int> removes{0};
  ulp.OnIrp(fdo, [&](kernel::DeviceObject*, kernel::Irp* irp) {
    if (kernel::IoGetCurrentIrpStackLocation(irp)->MajorFunction == kernel::IrpMajor::kPnp) {
      removes.fetch_add(1);
      ulp.Delete(fdo);  // the function driver detaches, then passes the REMOVE down
      kernel::IoSkipCurrentIrpStackLocation(irp);
      return kernel::IoCallDriver(below, irp);
    }
    return kernel::testing::CompleteIrp(irp, Status::UNSUPPORTED);
  });

  ASSERT_EQ(hca::HcaRemoveCa(hca_, kGuidA), Status::SUCCESS);
  ASSERT_TRUE(WaitFor([&] { return BusPdoCount(bus_) == 0; }));
  EXPECT_EQ(removes.load(), 1);
}

TEST_F(BusDriverTest, UnloadWithCasPresentRemovesEveryPdo) {
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 2), 1), Status::SUCCESS);
  ASSERT_EQ(LoadBusDriver(&node_, &bus_), Status::SUCCESS);
  ASSERT_TRUE(WaitFor([&] { return BusPdoCount(bus_) == 3; }));
  UnloadBusDriver(bus_);
  bus_ = nullptr;
  EXPECT_FALSE(DeviceExists(node_, IpoibPdoName(kGuidA, 1)));
  EXPECT_FALSE(DeviceExists(node_, IouPdoName(kGuidA)));
}

TEST_F(BusDriverTest, PdosForwardTheIrpsTheyDoNotOwnToTheVerbDeviceInTheirOwnLocation) {
  VerbTarget target(node_);
  BusOptions options;
  options.verb_device = "verbs";
  options.iou_driver = false;  // no AL behind "verbs" (iou_fdo_test.cc has one)
  ASSERT_EQ(LoadBusDriver(&node_, &bus_, options), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 1), 1), Status::SUCCESS);
  ASSERT_EQ(WaitForBusCa(bus_, kGuidA, true), Status::SUCCESS);
  for (const std::string& name : {IpoibPdoName(kGuidA, 1), IouPdoName(kGuidA)}) {
    kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(&node_, name.c_str());
    ASSERT_NE(pdo, nullptr);
    // Room for the target's location besides the PDO's own.
    EXPECT_EQ(pdo->StackSize, target.device->StackSize + 1) << name;
    kernel::FileObject file{};
    char output[5] = {};
    // Internal (a kernel ULP's verbs) and external device control both go on, with the
    // sender's file, code, buffers and the target's status.
    EXPECT_EQ(SendIoctl(pdo, 0x0022A004, true, &file, 7, &output), Status::INVALID_QP_HANDLE);
    EXPECT_STREQ(output, "done");
    EXPECT_EQ(SendIoctl(pdo, 0x0022A008, false, &file, 8, &output), Status::INVALID_QP_HANDLE);
    // The identity query stays the PDO's.
    PdoIdentity identity{};
    kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(kIoctlBusQueryIdentity, pdo, nullptr,
                                                             0, &identity, sizeof identity, true);
    EXPECT_EQ(kernel::IoCallDriverAndWait(pdo, irp), Status::SUCCESS);
    EXPECT_EQ(identity.ca_guid, kGuidA);
    using Seen = VerbTarget::Seen;
    EXPECT_EQ(target.Taken(),
              (std::vector<Seen>{{kernel::IrpMajor::kInternalDeviceControl, 0x0022A004, &file, 7},
                                 {kernel::IrpMajor::kDeviceControl, 0x0022A008, &file, 8}}))
        << name;
    std::lock_guard lock(target.mutex);
    target.seen.clear();
    kernel::ObDereferenceObject(pdo);
  }
  UnloadBusDriver(std::exchange(bus_, nullptr));  // before the target goes
}

TEST_F(BusDriverTest, WithoutAVerbDevicePdosAnswerUnsupportedAndAnUnknownOneFailsTheLoad) {
  BusOptions options;
  options.verb_device = "no-such-device";
  EXPECT_EQ(LoadBusDriver(&node_, &bus_, options), Status::NOT_FOUND);
  EXPECT_EQ(bus_, nullptr);
  ASSERT_EQ(LoadBusDriver(&node_, &bus_), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 1), 1), Status::SUCCESS);
  ASSERT_EQ(WaitForBusCa(bus_, kGuidA, true), Status::SUCCESS);
  kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(&node_, IpoibPdoName(kGuidA, 1).c_str());
  ASSERT_NE(pdo, nullptr);
  EXPECT_EQ(pdo->StackSize, 1);
  char output[5] = {};
  EXPECT_EQ(SendIoctl(pdo, 0x0022A004, true, nullptr, 1, &output), Status::UNSUPPORTED);
  kernel::ObDereferenceObject(pdo);
}

TEST_F(BusDriverTest, AfterItsCaIsRemovedAPdoCompletesWhatItWouldForwardWithCaRemoved) {
  VerbTarget target(node_);
  BusOptions options;
  options.verb_device = "verbs";
  options.iou_driver = false;  // no AL behind "verbs" (iou_fdo_test.cc has one)
  ASSERT_EQ(LoadBusDriver(&node_, &bus_, options), Status::SUCCESS);
  ASSERT_EQ(hca::HcaAddCa(hca_, Ca(kGuidA, 1), 1), Status::SUCCESS);
  ASSERT_EQ(WaitForBusCa(bus_, kGuidA, true), Status::SUCCESS);

  // A ULP's device over the port PDO: when the REMOVE reaches it (the CA is gone, the PDO
  // not yet), it sends one more IRP to its PDO, then lets go.
  kernel::testing::TestDriver ulp(node_, "ulp");
  kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(&node_, IpoibPdoName(kGuidA, 1).c_str());
  ASSERT_NE(pdo, nullptr);
  kernel::DeviceObject* fdo = ulp.CreateDevice();
  kernel::DeviceObject* below = ulp.Attach(fdo, pdo);
  EXPECT_EQ(fdo->StackSize, pdo->StackSize + 1);
  char before[5] = {};
  EXPECT_EQ(SendIoctl(pdo, 0x0022A004, true, nullptr, 1, &before), Status::INVALID_QP_HANDLE);
  std::atomic<Status> during{Status::PENDING};
  ulp.OnIrp(fdo, [&](kernel::DeviceObject*, kernel::Irp* irp) {
    if (kernel::IoGetCurrentIrpStackLocation(irp)->MajorFunction == kernel::IrpMajor::kPnp) {
      char output[5] = {};
      during = SendIoctl(pdo, 0x0022A004, true, nullptr, 2, &output);
      ulp.Delete(fdo);
      kernel::IoSkipCurrentIrpStackLocation(irp);
      return kernel::IoCallDriver(below, irp);
    }
    return kernel::testing::CompleteIrp(irp, Status::UNSUPPORTED);
  });

  ASSERT_EQ(hca::HcaRemoveCa(hca_, kGuidA), Status::SUCCESS);
  ASSERT_EQ(WaitForBusCa(bus_, kGuidA, false), Status::SUCCESS);
  EXPECT_EQ(during.load(), Status::CA_REMOVED);
  EXPECT_EQ(target.Taken().size(), 1u);  // only the IRP sent before the removal
  kernel::ObDereferenceObject(pdo);
  UnloadBusDriver(std::exchange(bus_, nullptr));  // before the target goes
}

}  // namespace
}  // namespace softib::bus
