// The HCA driver: CA devices, their dispatch (CI query, event waits, removal), cables.
#include "softib/hca/hca_driver.h"

#include <map>
#include <memory>
#include <vector>

#include "hca/driver/src/port_link.h"
#include "hca/driver/src/ring_service.h"
#include "hca/driver/src/soft_ca.h"
#include "softib/kernel/io.h"
#include "softib/kernel/mutex.h"
#include "softib/kernel/pnp.h"
#include "softib/kernel/verb_support.h"

namespace softib::hca {

using kernel::Status;

namespace {

constexpr uint32_t kFileDeviceInfiniband = 0x3B;

struct CaExtension {
  SoftCa* ca;  // the device's reference
};

struct CaEntry {
  SoftCa* ca = nullptr;
  kernel::DeviceObject* device = nullptr;
  std::vector<std::unique_ptr<PortLink>> links;  // transmit side of this CA's cabled ports
};

SoftCa* CaOf(kernel::DeviceObject* device) {
  return static_cast<CaExtension*>(device->DeviceExtension)->ca;
}

Status CompleteWith(kernel::Irp* irp, Status status) {
  return kernel::CompleteVerbIrp(irp, status, 0);
}

Status DispatchCreateClose(kernel::DeviceObject*, kernel::Irp* irp) {
  return CompleteWith(irp, Status::SUCCESS);
}

Status DispatchInternal(kernel::DeviceObject* device, kernel::Irp* irp) {
  SoftCa* ca = CaOf(device);
  const auto& params = kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl;
  switch (params.IoControlCode) {
    case ci::kIoctlCiQueryInterface: {
      if (params.OutputBufferLength < sizeof(ci::CiQueryInterfaceOut)) {
        return CompleteWith(irp, Status::INVALID_PARAMETER);
      }
      if (ca->removed()) return CompleteWith(irp, Status::CA_REMOVED);
      ca->Reference();
      static_cast<ci::CiQueryInterfaceOut*>(irp->AssociatedIrp.SystemBuffer)->ci = ca;
      return kernel::CompleteVerbIrp(irp, Status::SUCCESS, sizeof(ci::CiQueryInterfaceOut));
    }
    case ci::kIoctlCiWaitEvents:
      return ca->WaitEvents(irp);
    default:
      return CompleteWith(irp, Status::UNSUPPORTED);
  }
}

// The bottom of the CA's stack: the filters above have already let go of the CA.
Status DispatchPnp(kernel::DeviceObject* device, kernel::Irp* irp) {
  if (kernel::IoGetCurrentIrpStackLocation(irp)->MinorFunction != kIrpMinorRemoveDevice) {
    return CompleteWith(irp, Status::UNSUPPORTED);
  }
  CaOf(device)->MarkRemoved();
  kernel::IoSetDeviceInterfaceState(device, ci::kCiInterfaceClass, false);
  return CompleteWith(irp, Status::SUCCESS);
}

Status DriverEntry(kernel::DriverObject* driver, void* context) {
  driver->DriverExtension = context;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kCreate)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kCleanup)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kClose)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kInternalDeviceControl)] =
      &DispatchInternal;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kPnp)] = &DispatchPnp;
  driver->Unload = [](kernel::DriverObject*) {};  // CAs are removed before unload
  return Status::SUCCESS;
}

}  // namespace

struct HcaDriver {
  explicit HcaDriver(kernel::Node* n) : node(n), wire(n), rings(n, &wire) {}
  kernel::Node* node;
  kernel::DriverObject* driver = nullptr;
  PacketWire wire;
  RingService rings;                // the speed path's thread, started by the first ring mapping
  kernel::FastMutex mutex;          // PASSIVE configuration changes
  std::map<uint64_t, CaEntry> cas;  // by node GUID; mutex held

  std::vector<PortLink*> AllLinks() {
    std::vector<PortLink*> links;
    for (auto& [guid, entry] : cas) {
      for (auto& link : entry.links) {
        if (link) links.push_back(link.get());
      }
    }
    return links;
  }
};

Status LoadHcaDriver(kernel::Node* node, HcaDriver** out) {
  auto driver = std::make_unique<HcaDriver>(node);
  const Status status =
      kernel::IoCreateDriver(node, "softib_hca", &DriverEntry, driver.get(), &driver->driver);
  if (status != Status::SUCCESS) return status;
  *out = driver.release();
  return Status::SUCCESS;
}

void UnloadHcaDriver(HcaDriver* driver) {
  std::vector<uint64_t> guids;
  driver->mutex.Acquire();
  for (const auto& [guid, entry] : driver->cas) guids.push_back(guid);
  driver->mutex.Release();
  for (const uint64_t guid : guids) HcaRemoveCa(driver, guid);
  driver->rings.Stop();
  driver->wire.DeliverQueued();             // what the service thread left: to removed CAs
  kernel::KeFlushQueuedDpcs(driver->node);  // packets still queued go nowhere harmful
  kernel::IoUnloadDriver(driver->driver);
  delete driver;
}

Status HcaAddCa(HcaDriver* driver, const HcaConfig& config, uint16_t first_lid) {
  const std::string name = ci::CaDeviceName(config.node_guid);
  driver->mutex.Acquire();
  if (driver->cas.count(config.node_guid) != 0) {
    driver->mutex.Release();
    return Status::RESOURCE_BUSY;
  }
  auto* ca = new SoftCa(driver->node, config, first_lid, &driver->rings);
  kernel::DeviceObject* device = nullptr;
  Status status = kernel::IoCreateDevice(driver->driver, sizeof(CaExtension), name.c_str(),
                                         kFileDeviceInfiniband, &device);
  if (status != Status::SUCCESS) {
    driver->mutex.Release();
    ca->Dereference();
    return status;
  }
  static_cast<CaExtension*>(device->DeviceExtension)->ca = ca;
  ca->device = device;
  CaEntry& entry = driver->cas[config.node_guid];
  entry.ca = ca;
  entry.device = device;
  entry.links.resize(config.num_ports);
  driver->mutex.Release();
  return kernel::IoSetDeviceInterfaceState(device, ci::kCiInterfaceClass, true);
}

Status HcaCablePorts(HcaDriver* driver, uint64_t guid_a, uint8_t port_a, uint64_t guid_b,
                     uint8_t port_b) {
  driver->mutex.Acquire();
  auto a = driver->cas.find(guid_a);
  auto b = driver->cas.find(guid_b);
  Status status = Status::SUCCESS;
  if (a == driver->cas.end() || b == driver->cas.end()) {
    status = Status::INVALID_GUID;
  } else if (port_a == 0 || port_a > a->second.links.size() || port_b == 0 ||
             port_b > b->second.links.size() || a->second.links[port_a - 1] ||
             b->second.links[port_b - 1]) {
    status = Status::INVALID_PORT;
  } else {
    a->second.links[port_a - 1] = std::make_unique<PortLink>(&driver->wire, b->second.ca, port_b);
    b->second.links[port_b - 1] = std::make_unique<PortLink>(&driver->wire, a->second.ca, port_a);
    a->second.ca->SetPortLink(port_a, a->second.links[port_a - 1].get());
    b->second.ca->SetPortLink(port_b, b->second.links[port_b - 1].get());
  }
  driver->mutex.Release();
  return status;
}

Status HcaRemoveCa(HcaDriver* driver, uint64_t node_guid) {
  driver->mutex.Acquire();
  auto it = driver->cas.find(node_guid);
  if (it == driver->cas.end()) {
    driver->mutex.Release();
    return Status::INVALID_GUID;
  }
  CaEntry entry = std::move(it->second);
  driver->cas.erase(it);
  // Nothing reaches the CA any more; what is queued for it is dropped on delivery.
  driver->wire.CutAllTo(driver->AllLinks(), entry.ca);
  for (auto& link : entry.links) {
    if (link) driver->wire.Cut(link.get());
  }
  driver->mutex.Release();

  // IRP_MN_REMOVE_DEVICE down the whole stack: filters first, the CA last.
  kernel::DeviceObject* top = kernel::IoGetAttachedDeviceReference(entry.device);
  kernel::Irp* irp = kernel::IoAllocateIrp(top->StackSize);
  kernel::IoStackLocation* next = kernel::IoGetNextIrpStackLocation(irp);
  next->MajorFunction = kernel::IrpMajor::kPnp;
  next->MinorFunction = kIrpMinorRemoveDevice;
  kernel::IoCallDriverAndWait(top, irp);
  kernel::IoFreeIrp(irp);
  kernel::ObDereferenceObject(top);

  for (uint8_t p = 1; p <= entry.links.size(); ++p) entry.ca->SetPortLink(p, nullptr);
  kernel::IoDeleteDevice(entry.device);
  entry.ca->Dereference();
  return Status::SUCCESS;
}

}  // namespace softib::hca
