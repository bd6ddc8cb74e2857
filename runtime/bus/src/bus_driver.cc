// The bus driver: CA arrival → PDOs, CA removal → PDOs removed.
#include "softib/bus/bus_driver.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <vector>

#include "pdo.h"
#include "softib/ci/ci.h"
#include "softib/kernel/device.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/mutex.h"
#include "softib/kernel/pnp.h"

namespace softib::bus {

using kernel::Status;

// The PDOs enumerated for one CA (outside the anonymous namespace, as BusDriver, which
// holds them and is declared in the public header, is).
struct CaChildren {
  uint64_t guid = 0;
  std::vector<kernel::DeviceObject*> ports;  // index: port - 1
  kernel::DeviceObject* iou = nullptr;
};

namespace {

std::string GuidHex(uint64_t guid) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, guid);
  return text;
}

}  // namespace

struct BusDriver {
  kernel::Node* node = nullptr;
  kernel::DriverObject* driver = nullptr;
  kernel::PnpRegistration* registration = nullptr;
  kernel::DeviceObject* verb_device = nullptr;  // referenced; null without one
  IouDriver* iou = nullptr;                     // with a verb device
  kernel::FastMutex mutex;  // guards `cas` (PnP callbacks vs. unload and queries)
  std::map<kernel::DeviceObject*, CaChildren> cas;
};

std::string IpoibPdoName(uint64_t ca_guid, uint8_t port) {
  return "ipoib-" + GuidHex(ca_guid) + "-" + std::to_string(port);
}

std::string IouPdoName(uint64_t ca_guid) { return "iou-" + GuidHex(ca_guid); }

std::string IocPdoName(uint64_t ioc_guid, uint64_t ca_guid) {
  return "ioc-" + GuidHex(ioc_guid) + "-" + GuidHex(ca_guid);
}

namespace {

// Reads the CA's GUID and port count through the CI query (the reference it returns is
// dropped at once: the bus keeps nothing of the CA but its identity). This stays a direct
// read of the interface (issue 17): node_guid/num_ports are the CA's identity, fixed for
// its life, answered by the interface object itself, not command-interface verbs that
// reach the device (those are the CI IRPs of kernel/hca/ci_irp.h).
Status QueryCa(kernel::DeviceObject* ca_device, uint64_t* guid, uint8_t* num_ports) {
  ci::CiQueryInterfaceOut out{};
  kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(ci::kIoctlCiQueryInterface, ca_device,
                                                           nullptr, 0, &out, sizeof out, true);
  const Status status = kernel::IoCallDriverAndWait(ca_device, irp);
  if (status != Status::SUCCESS || out.ci == nullptr) {
    return status == Status::SUCCESS ? Status::INVALID_STATE : status;
  }
  *guid = out.ci->node_guid();
  *num_ports = out.ci->num_ports();
  out.ci->Dereference();
  return Status::SUCCESS;
}

void MarkCaRemoved(const CaChildren& children) {
  for (kernel::DeviceObject* pdo : children.ports) MarkPdoCaRemoved(pdo);
  if (children.iou != nullptr) MarkPdoCaRemoved(children.iou);
}

void RemoveChildren(CaChildren& children) {
  for (kernel::DeviceObject* pdo : children.ports) RemovePdo(pdo, kIpoibInterfaceClass);
  if (children.iou != nullptr) RemovePdo(children.iou, kIouInterfaceClass);
  children.ports.clear();
  children.iou = nullptr;
}

void OnCaArrival(BusDriver* bus, kernel::DeviceObject* ca_device) {
  CaChildren children;
  uint8_t num_ports = 0;
  if (QueryCa(ca_device, &children.guid, &num_ports) != Status::SUCCESS) return;
  for (uint8_t port = 1; port <= num_ports; ++port) {
    IocIdentity identity{};
    identity.pdo = {PdoKind::kIpoibPort, port, {}, children.guid};
    kernel::DeviceObject* pdo = nullptr;
    if (CreatePdo(bus->driver, IpoibPdoName(children.guid, port), identity, bus->verb_device,
                  kIpoibInterfaceClass, &pdo) == Status::SUCCESS) {
      children.ports.push_back(pdo);
    }
  }
  IocIdentity iou{};
  iou.pdo = {PdoKind::kIou, 0, {}, children.guid};
  CreatePdo(bus->driver, IouPdoName(children.guid), iou, bus->verb_device, kIouInterfaceClass,
            &children.iou);
  bus->mutex.Acquire();
  bus->cas[ca_device] = std::move(children);
  bus->mutex.Release();
}

void OnCaRemoval(BusDriver* bus, kernel::DeviceObject* ca_device) {
  // The CA stays listed until its PDOs are gone, so that WaitForBusCa(absent) means gone.
  // PnP callbacks run one at a time, so nothing else changes this entry meanwhile.
  CaChildren children;
  bus->mutex.Acquire();
  auto it = bus->cas.find(ca_device);
  const bool known = it != bus->cas.end();
  if (known) children = it->second;
  bus->mutex.Release();
  if (!known) return;
  // The CA is gone: what a ULP still sends through its PDO fails CA_REMOVED from now on,
  // while the REMOVE goes down the PDO stacks.
  MarkCaRemoved(children);
  RemoveChildren(children);
  bus->mutex.Acquire();
  bus->cas.erase(ca_device);
  bus->mutex.Release();
}

void OnCiNotification(const kernel::PnpNotification& notification, void* context) {
  auto* bus = static_cast<BusDriver*>(context);
  if (notification.event == kernel::PnpEvent::kArrival) {
    OnCaArrival(bus, notification.device);
  } else {
    OnCaRemoval(bus, notification.device);
  }
}

Status DriverEntry(kernel::DriverObject* driver, void* context) {
  driver->DriverExtension = context;
  InstallPdoDispatch(driver);
  return Status::SUCCESS;
}

}  // namespace

Status LoadBusDriver(kernel::Node* node, BusDriver** out, const BusOptions& options) {
  auto* bus = new BusDriver;
  bus->node = node;
  if (!options.verb_device.empty()) {
    bus->verb_device = kernel::IoGetDeviceByName(node, options.verb_device.c_str());
    if (bus->verb_device == nullptr) {
      delete bus;
      return Status::NOT_FOUND;
    }
  }
  Status status = kernel::IoCreateDriver(node, "ibbus", &DriverEntry, bus, &bus->driver);
  if (status != Status::SUCCESS) {
    if (bus->verb_device != nullptr) kernel::ObDereferenceObject(bus->verb_device);
    delete bus;
    return status;
  }
  // The IOU driver listens before the first IOU PDO can arrive.
  if (bus->verb_device != nullptr && options.iou_driver) {
    status = LoadIouDriver(node, options.verb_device, bus->verb_device, &bus->iou);
    if (status != Status::SUCCESS) {
      kernel::IoUnloadDriver(bus->driver);
      kernel::ObDereferenceObject(bus->verb_device);
      delete bus;
      return status;
    }
  }
  status = kernel::IoRegisterPlugPlayNotification(node, ci::kCiInterfaceClass, true,
                                                  &OnCiNotification, bus, &bus->registration);
  if (status != Status::SUCCESS) {
    if (bus->iou != nullptr) UnloadIouDriver(bus->iou);
    kernel::IoUnloadDriver(bus->driver);
    if (bus->verb_device != nullptr) kernel::ObDereferenceObject(bus->verb_device);
    delete bus;
    return status;
  }
  *out = bus;
  return Status::SUCCESS;
}

void UnloadBusDriver(BusDriver* bus) {
  // After this no callback runs, so the children below are ours alone.
  kernel::IoUnregisterPlugPlayNotification(bus->registration);
  // No FDO attaches any more over a PDO about to go; the REMOVE of each IOU PDO takes its
  // FDO's IOC PDOs with it.
  if (bus->iou != nullptr) StopIouArrivals(bus->iou);
  for (auto& [device, children] : bus->cas) RemoveChildren(children);
  bus->cas.clear();
  if (bus->iou != nullptr) UnloadIouDriver(bus->iou);
  kernel::IoUnloadDriver(bus->driver);
  if (bus->verb_device != nullptr) kernel::ObDereferenceObject(bus->verb_device);
  delete bus;
}

size_t BusPdoCount(BusDriver* bus) {
  bus->mutex.Acquire();
  size_t count = 0;
  for (const auto& [device, children] : bus->cas) {
    count += children.ports.size() + (children.iou != nullptr ? 1 : 0);
  }
  bus->mutex.Release();
  return count;
}

size_t BusIocPdoCount(BusDriver* bus) { return bus->iou != nullptr ? IouIocPdoCount(bus->iou) : 0; }

Status WaitForBusCa(BusDriver* bus, uint64_t guid, bool present,
                    std::chrono::milliseconds timeout) {
  kernel::VerifyBlockingAllowed("WaitForBusCa");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool found = false;
    bus->mutex.Acquire();
    for (const auto& [device, children] : bus->cas) found = found || children.guid == guid;
    bus->mutex.Release();
    if (found == present) return Status::SUCCESS;
    if (std::chrono::steady_clock::now() >= deadline) return Status::TIMEOUT;
    kernel::KeDelayExecutionThread(std::chrono::milliseconds(1));
  }
}

}  // namespace softib::bus
