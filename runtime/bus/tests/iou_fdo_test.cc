// The IOU FDO against a scripted AL device: the bus forwards to "ibal-script", which answers
// OpenAl and RegisterPnp, keeps GetPnpEvent IRPs pending (cancel-safe) until the test posts
// an IOC event record, and answers QueryCa with bytes of its own. Checks that the FDO is a
// client through IRPs only (its kernel-mode file on the AL device, an IOC registration, one
// event IRP pending per FDO), that an IOC_ADD of the FDO's CA makes an IOC PDO with the
// identity decoded from the profile and forwarding verb IRPs, that another CA's record makes
// none, and that the IOC PDO goes on IOC_REMOVE and with its CA (REMOVE down its stack first,
// then verbs through it answer CA_REMOVED).
#include <endian.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/verbs_al.h"
#include "softib/abi/verbs_ca.h"
#include "softib/bus/bus_driver.h"
#include "softib/hca/hca_driver.h"
#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/node.h"
#include "softib/kernel/pnp.h"
#include "softib/kernel/work_item.h"
#include "test_driver.h"

namespace softib::bus {
namespace {

using kernel::Irp;
using kernel::Status;

constexpr uint64_t kCaA = 0x0002c90300a0c001ull;
constexpr uint64_t kCaB = 0x0002c90300a0c002ull;
constexpr uint64_t kIocGuid = 0x0002c90300ab0001ull;
constexpr char kScriptDevice[] = "ibal-script";

// The AL's part, scripted.
struct ScriptedAl {
  explicit ScriptedAl(kernel::Node& node) : driver(node, "ibal_script"), pending(&node) {
    device = driver.CreateDevice(kScriptDevice);
    driver.OnIrp(device, [this](kernel::DeviceObject*, Irp* irp) { return Dispatch(irp); });
  }
  ~ScriptedAl() {
    while (Irp* irp = pending.Remove()) kernel::testing::CompleteIrp(irp, Status::CANCELED);
  }

  Status Dispatch(Irp* irp) {
    kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
    std::unique_lock lock(mutex);
    switch (location->MajorFunction) {
      case kernel::IrpMajor::kCreate:
        opened.insert(location->FileObject);
        create_modes.push_back(irp->RequestorMode);
        return Complete(lock, irp, Status::SUCCESS, 0);
      case kernel::IrpMajor::kCleanup:
        cleaned.insert(location->FileObject);
        return Complete(lock, irp, Status::SUCCESS, 0);
      case kernel::IrpMajor::kInternalDeviceControl:
        break;
      default:
        return Complete(lock, irp, Status::SUCCESS, 0);
    }
    const uint32_t code = location->Parameters.DeviceIoControl.IoControlCode;
    void* buffer = irp->AssociatedIrp.SystemBuffer;
    files.push_back({code, location->FileObject});
    if (code == abi::kIoctlOpenAl) {
      abi::OpenAlIn in{};
      std::memcpy(&in, buffer, sizeof in);
      if (in.interface_version != abi::kAlInterfaceVersion) {
        return Complete(lock, irp, Status::UNSUPPORTED, 0);
      }
      const abi::OpenAlOut out{{0xA1}};
      std::memcpy(buffer, &out, sizeof out);
      return Complete(lock, irp, Status::SUCCESS, sizeof out);
    }
    if (code == abi::kIoctlRegisterPnp) {
      abi::RegisterPnpIn in{};
      std::memcpy(&in, buffer, sizeof in);
      registrations.push_back(in);
      const abi::RegisterPnpOut out{{0x100 + registrations.size()}};
      std::memcpy(buffer, &out, sizeof out);
      return Complete(lock, irp, Status::SUCCESS, sizeof out);
    }
    if (code == abi::kIoctlGetPnpEvent) {
      const Status status = pending.Insert(irp);
      ++waiting;
      changed.notify_all();
      return status;
    }
    if (code == abi::kIoctlQueryCa) {
      std::memcpy(buffer, "scripted", 8);
      return Complete(lock, irp, Status::SUCCESS, 8);
    }
    return Complete(lock, irp, Status::INVALID_PARAMETER, 0);
  }

  Status Complete(std::unique_lock<std::mutex>& lock, Irp* irp, Status status,
                  uint64_t information) {
    lock.unlock();
    return kernel::testing::CompleteIrp(irp, status, information);
  }

  // Completes `count` pending GetPnpEvent IRPs (one per FDO) with `record`, once that many
  // are pending (each FDO asks again once it has served the last one).
  bool Post(abi::PnpEventRecord record, size_t count) {
    std::vector<Irp*> irps;
    {
      std::unique_lock lock(mutex);
      if (!changed.wait_for(lock, std::chrono::seconds(10), [&] { return waiting >= count; })) {
        return false;
      }
      waiting -= count;
      for (size_t i = 0; i < count; ++i) irps.push_back(pending.Remove());
    }
    for (Irp* irp : irps) {
      if (irp == nullptr) return false;
      abi::GetPnpEventIn in{};
      std::memcpy(&in, irp->AssociatedIrp.SystemBuffer, sizeof in);
      abi::GetPnpEventOut out{record};
      out.record.reg = in.reg;
      std::memcpy(irp->AssociatedIrp.SystemBuffer, &out, sizeof out);
      kernel::testing::CompleteIrp(irp, Status::SUCCESS, sizeof out);
    }
    return true;
  }
  // Waits until `count` GetPnpEvent IRPs are pending (the FDOs have served what was posted).
  bool WaitPending(size_t count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return waiting >= count; });
  }

  kernel::testing::TestDriver driver;
  kernel::DeviceObject* device = nullptr;
  kernel::CancelSafeQueue pending;
  std::mutex mutex;
  std::condition_variable changed;
  size_t waiting = 0;  // GetPnpEvent IRPs received and not yet posted to (cancelled ones too)
  std::set<kernel::FileObject*> opened, cleaned;
  std::vector<kernel::ProcessorMode> create_modes;
  std::vector<std::pair<uint32_t, kernel::FileObject*>> files;
  std::vector<abi::RegisterPnpIn> registrations;
};

// An IOC event record as the AL's IOC PnP makes one.
abi::PnpEventRecord IocRecord(abi::PnpEvent event, uint64_t ca_guid) {
  abi::PnpEventRecord r{};
  r.event = event;
  r.port_num = 1;
  r.guid = htobe64(kIocGuid);
  r.ca_guid = htobe64(ca_guid);
  r.iou_lid = 0x0017;
  r.ioc_slot = 2;
  r.num_service_entries = 1;
  r.iou_gid.raw[0] = 0xFE;
  r.iou_gid.raw[1] = 0x80;
  const uint8_t port_guid[8] = {0x00, 0x02, 0xc9, 0x03, 0x00, 0xab, 0x00, 0x99};
  std::memcpy(r.iou_gid.raw + 8, port_guid, 8);
  const uint64_t guid = htobe64(kIocGuid);
  std::memcpy(r.ioc_profile, &guid, 8);
  const uint8_t fields[] = {0x00, 0x14, 0x05, 0x00,  // VendorID 0x001405
                            0x00, 0x00, 0x56, 0x78,  // DeviceID
                            0x00, 0x03};             // DeviceVersion
  std::memcpy(r.ioc_profile + 8, fields, sizeof fields);
  const uint8_t classes[] = {0x01, 0x00, 0x60, 0x9E, 0x01, 0x08, 0x00, 0x01};
  std::memcpy(r.ioc_profile + 28, classes, sizeof classes);  // IOClass .. ProtocolVersion
  std::memcpy(r.service_entries, "SRP.T10:0002C90300AB00FF", 24);
  return r;
}

// A ULP driver for softib.ioc: the identities of the PDOs that arrived, the removals.
struct IocListener {
  explicit IocListener(kernel::Node& node) {
    EXPECT_EQ(kernel::IoRegisterPlugPlayNotification(&node, kIocInterfaceClass, true, &Callback,
                                                     this, &registration),
              Status::SUCCESS);
  }
  ~IocListener() { kernel::IoUnregisterPlugPlayNotification(registration); }
  static void Callback(const kernel::PnpNotification& n, void* context) {
    auto* self = static_cast<IocListener*>(context);
    std::lock_guard lock(self->mutex);
    if (n.event == kernel::PnpEvent::kArrival) {
      IocIdentity identity{};
      Irp* irp = kernel::IoBuildDeviceIoControlRequest(kIoctlBusQueryIdentity, n.device, nullptr, 0,
                                                       &identity, sizeof identity, true);
      self->identity_status = kernel::IoCallDriverAndWait(n.device, irp);
      self->arrived.push_back(identity);
    } else {
      ++self->removed;
    }
    self->changed.notify_all();
  }
  bool WaitFor(size_t arrivals, size_t removals) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10),
                            [&] { return arrived.size() >= arrivals && removed >= removals; });
  }
  kernel::PnpRegistration* registration = nullptr;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<IocIdentity> arrived;
  Status identity_status = Status::PENDING;
  size_t removed = 0;
};

bool IocDeviceExists(kernel::Node& node, const std::string& name) {
  kernel::DeviceObject* device = kernel::IoGetDeviceByName(&node, name.c_str());
  if (device == nullptr) return false;
  kernel::ObDereferenceObject(device);
  return true;
}

Status SendQueryCa(kernel::DeviceObject* pdo, kernel::FileObject* file, char (*output)[9]) {
  const abi::QueryCaIn in{{0x77}};
  Irp* irp = kernel::IoBuildDeviceIoControlRequest(abi::kIoctlQueryCa, pdo, &in, sizeof in, *output,
                                                   8, true);
  kernel::IoGetNextIrpStackLocation(irp)->FileObject = file;
  return kernel::IoCallDriverAndWait(pdo, irp);
}

hca::HcaConfig OnePortCa(uint64_t guid) {
  hca::HcaConfig config;
  config.node_guid = guid;
  config.num_ports = 1;
  return config;
}

class IouFdoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(hca::LoadHcaDriver(&node_, &hca_), Status::SUCCESS);
    al_ = std::make_unique<ScriptedAl>(node_);
    BusOptions options;
    options.verb_device = kScriptDevice;
    ASSERT_EQ(LoadBusDriver(&node_, &bus_, options), Status::SUCCESS);
    for (const uint64_t guid : {kCaA, kCaB}) {
      ASSERT_EQ(hca::HcaAddCa(hca_, OnePortCa(guid), guid == kCaA ? 1 : 2), Status::SUCCESS);
      ASSERT_EQ(WaitForBusCa(bus_, guid, true), Status::SUCCESS);
    }
    ASSERT_TRUE(al_->WaitPending(2));  // both FDOs are listening
  }
  void TearDown() override {
    if (bus_ != nullptr) UnloadBusDriver(bus_);
    al_.reset();
    hca::UnloadHcaDriver(hca_);
  }
  kernel::Node node_;
  hca::HcaDriver* hca_ = nullptr;
  std::unique_ptr<ScriptedAl> al_;
  BusDriver* bus_ = nullptr;
};

TEST_F(IouFdoTest, EachIouFdoIsAClientOfTheAlThroughIrpsOnItsOwnKernelFile) {
  std::lock_guard lock(al_->mutex);
  // One kernel-mode open per FDO, and every verb IRP of an FDO carries its file.
  ASSERT_EQ(al_->opened.size(), 2u);
  EXPECT_EQ(al_->create_modes,
            (std::vector<kernel::ProcessorMode>(2, kernel::ProcessorMode::kKernelMode)));
  std::map<kernel::FileObject*, std::vector<uint32_t>> codes;
  for (const auto& [code, file] : al_->files) codes[file].push_back(code);
  ASSERT_EQ(codes.size(), 2u);
  for (const auto& [file, sent] : codes) {
    EXPECT_TRUE(al_->opened.contains(file));
    EXPECT_EQ(sent, (std::vector<uint32_t>{abi::kIoctlOpenAl, abi::kIoctlRegisterPnp,
                                           abi::kIoctlGetPnpEvent}));
  }
  ASSERT_EQ(al_->registrations.size(), 2u);
  for (const abi::RegisterPnpIn& in : al_->registrations) {
    EXPECT_EQ(in.al.value, 0xA1u);  // the Al handle OpenAl gave
    EXPECT_EQ(in.pnp_class, abi::PnpClass::IOC);
  }
  EXPECT_EQ(BusIocPdoCount(bus_), 0u);
}

TEST_F(IouFdoTest, AnIocOfTheCaBecomesAPdoThatForwardsVerbsAndGoesOnIocRemove) {
  IocListener listener(node_);
  const std::string name = IocPdoName(kIocGuid, kCaA);
  EXPECT_EQ(name, "ioc-0002c90300ab0001-0002c90300a0c001");
  // Both FDOs get it; only CA A's enumerates it.
  ASSERT_TRUE(al_->Post(IocRecord(abi::PnpEvent::IOC_ADD, kCaA), 2));
  ASSERT_TRUE(listener.WaitFor(1, 0));
  ASSERT_TRUE(al_->WaitPending(2));  // both served it
  EXPECT_EQ(BusIocPdoCount(bus_), 1u);
  EXPECT_FALSE(IocDeviceExists(node_, IocPdoName(kIocGuid, kCaB)));
  {
    std::lock_guard lock(listener.mutex);
    ASSERT_EQ(listener.arrived.size(), 1u);
    EXPECT_EQ(listener.identity_status, Status::SUCCESS);
    const IocIdentity& id = listener.arrived[0];
    EXPECT_EQ(id.pdo.kind, PdoKind::kIoc);
    EXPECT_EQ(id.pdo.port, 1);
    EXPECT_EQ(id.pdo.ca_guid, kCaA);
    EXPECT_EQ(id.ioc_guid, kIocGuid);
    EXPECT_EQ(id.id_ext, 0x0002C90300AB00FFull);  // from "SRP.T10:<id_ext>"
    EXPECT_EQ(id.iou_port_guid, 0x0002c90300ab0099ull);
    EXPECT_EQ(id.vendor_id, 0x001405u);
    EXPECT_EQ(id.device_id, 0x5678u);
    EXPECT_EQ(id.device_version, 3);
    EXPECT_EQ(id.io_class, 0x0100);
    EXPECT_EQ(id.io_subclass, 0x609E);
    EXPECT_EQ(id.protocol, 0x0108);
    EXPECT_EQ(id.protocol_version, 1);
    EXPECT_EQ(id.iou_lid, 0x0017);
    EXPECT_EQ(id.ioc_slot, 2);
    EXPECT_EQ(id.num_service_entries, 1);
  }
  kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(&node_, name.c_str());
  ASSERT_NE(pdo, nullptr);
  // A short buffer gets the PdoIdentity prefix.
  PdoIdentity prefix{};
  Irp* irp = kernel::IoBuildDeviceIoControlRequest(kIoctlBusQueryIdentity, pdo, nullptr, 0, &prefix,
                                                   sizeof prefix, true);
  EXPECT_EQ(kernel::IoCallDriverAndWait(pdo, irp), Status::SUCCESS);
  EXPECT_EQ(prefix.kind, PdoKind::kIoc);
  EXPECT_EQ(prefix.ca_guid, kCaA);
  // A client's verb IRP goes on to the AL with the client's file.
  kernel::FileObject client{};
  char output[9] = {};
  EXPECT_EQ(SendQueryCa(pdo, &client, &output), Status::SUCCESS);
  EXPECT_STREQ(output, "scripted");
  {
    std::lock_guard lock(al_->mutex);
    ASSERT_FALSE(al_->files.empty());
    EXPECT_EQ(al_->files.back(), std::make_pair(abi::kIoctlQueryCa, &client));
  }
  kernel::ObDereferenceObject(pdo);

  ASSERT_TRUE(al_->Post(IocRecord(abi::PnpEvent::IOC_REMOVE, kCaA), 2));
  ASSERT_TRUE(listener.WaitFor(1, 1));
  // The removal is announced before the PDO is deleted: the FDO's work item has finished once
  // the node's workers are idle.
  kernel::IoFlushQueuedWorkItems(&node_);
  EXPECT_FALSE(IocDeviceExists(node_, name));
  EXPECT_EQ(BusIocPdoCount(bus_), 0u);
}

TEST_F(IouFdoTest, TheIocPdoGoesWithItsCaAfterTheFunctionDriverOverItLetGo) {
  IocListener listener(node_);
  ASSERT_TRUE(al_->Post(IocRecord(abi::PnpEvent::IOC_ADD, kCaA), 2));
  ASSERT_TRUE(listener.WaitFor(1, 0));
  const std::string name = IocPdoName(kIocGuid, kCaA);
  kernel::DeviceObject* pdo = kernel::IoGetDeviceByName(&node_, name.c_str());
  ASSERT_NE(pdo, nullptr);
  // A ULP's device over the IOC PDO (an SRP initiator's): on REMOVE it sends one more verb
  // through its PDO, then lets go.
  kernel::testing::TestDriver ulp(node_, "ulp_srp");
  kernel::DeviceObject* fdo = ulp.CreateDevice();
  kernel::DeviceObject* below = ulp.Attach(fdo, pdo);
  EXPECT_EQ(below, pdo);
  std::atomic<Status> during{Status::PENDING};
  std::atomic<bool> pdo_existed{false};
  ulp.OnIrp(fdo, [&](kernel::DeviceObject*, Irp* irp) {
    if (kernel::IoGetCurrentIrpStackLocation(irp)->MajorFunction == kernel::IrpMajor::kPnp) {
      pdo_existed = IocDeviceExists(node_, name);
      char output[9] = {};
      during = SendQueryCa(pdo, nullptr, &output);
      ulp.Delete(fdo);
      kernel::IoSkipCurrentIrpStackLocation(irp);
      return kernel::IoCallDriver(below, irp);
    }
    return kernel::testing::CompleteIrp(irp, Status::UNSUPPORTED);
  });

  ASSERT_EQ(hca::HcaRemoveCa(hca_, kCaA), Status::SUCCESS);
  ASSERT_EQ(WaitForBusCa(bus_, kCaA, false), Status::SUCCESS);  // the IOU PDO is gone
  EXPECT_TRUE(pdo_existed.load());
  EXPECT_EQ(during.load(), Status::CA_REMOVED);
  EXPECT_FALSE(IocDeviceExists(node_, name));
  EXPECT_EQ(BusIocPdoCount(bus_), 0u);
  ASSERT_TRUE(listener.WaitFor(1, 1));
  // The FDO's event IRP was cancelled and its AL file closed; CA B's FDO still listens.
  std::lock_guard lock(al_->mutex);
  EXPECT_EQ(al_->cleaned.size(), 1u);
  EXPECT_EQ(al_->waiting, 2u);  // B's pending one, and A's that was cancelled
  EXPECT_EQ(al_->pending.empty(), false);
  kernel::ObDereferenceObject(pdo);
}

}  // namespace
}  // namespace softib::bus
