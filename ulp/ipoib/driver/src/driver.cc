// The IPoIB driver object: it hears the bus's softib.ipoib interface (an IPoIB PDO per CA
// port) and attaches an FDO over each PDO, as the bus's IOU driver does over IOU PDOs.
// Interfaces are created on an FDO (interface.cc) and talk to the AL through its PDO. The
// PDO's REMOVE (its CA removed, the bus unloading) reaches the FDO first: the interfaces on
// it are shut down (carrier down, every AL object released) before it goes on down.
#include <algorithm>
#include <utility>

#include "internal.h"
#include "kernel/device/ibat_dispatch.h"
#include "softib/bus/bus_driver.h"
#include "softib/kernel/io.h"
#include "softib/kernel/pnp.h"

namespace softib::ipoib {

using kernel::Irp;
using kernel::Status;

namespace {

struct FdoExtension {
  PortFdo* port;
};

PortFdo* PortOf(kernel::DeviceObject* fdo) {
  return static_cast<FdoExtension*>(fdo->DeviceExtension)->port;
}

Status CompleteIrp(Irp* irp, Status status) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = 0;
  kernel::IoCompleteRequest(irp);
  return status;
}

// The PDO's REMOVE (PASSIVE): shut the interfaces on it down, detach, pass it on, delete.
Status OnRemove(kernel::DeviceObject* fdo, Irp* irp) {
  PortFdo* port = PortOf(fdo);
  Driver* driver = port->driver;
  std::vector<Interface*> affected;
  {
    std::lock_guard guard(driver->mutex);
    port->removed = true;
    for (Interface* i : driver->interfaces) {
      if (i->port == port) affected.push_back(i);
    }
    driver->ports.erase(std::remove(driver->ports.begin(), driver->ports.end(), port),
                        driver->ports.end());
  }
  for (Interface* i : affected) ShutdownInterface(i);
  {
    std::lock_guard guard(driver->mutex);
    for (Interface* i : driver->interfaces) {
      if (i->port == port) i->port = nullptr;
    }
  }
  kernel::DeviceObject* lower = port->pdo;
  kernel::IoDetachDevice(lower);
  kernel::IoSkipCurrentIrpStackLocation(irp);
  const Status status = kernel::IoCallDriver(lower, irp);
  kernel::IoDeleteDevice(fdo);
  kernel::ObDereferenceObject(lower);
  delete port;
  return status;
}

Status Dispatch(kernel::DeviceObject* device, Irp* irp) {
  if (device == static_cast<Driver*>(device->DriverObject->DriverExtension)->ibat_device) {
    return DispatchIbatDevice(device, irp);
  }
  const kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
  if (location->MajorFunction == kernel::IrpMajor::kPnp &&
      location->MinorFunction == kernel::kIrpMinorRemoveDevice) {
    return OnRemove(device, irp);
  }
  PortFdo* port = PortOf(device);
  if (port == nullptr || port->pdo == nullptr) return CompleteIrp(irp, Status::UNSUPPORTED);
  kernel::IoSkipCurrentIrpStackLocation(irp);
  return kernel::IoCallDriver(port->pdo, irp);
}

// An IPoIB PDO arrived: an FDO over it.
void OnArrival(const kernel::PnpNotification& notification, void* context) {
  auto* driver = static_cast<Driver*>(context);
  if (notification.event != kernel::PnpEvent::kArrival) return;
  bus::PdoIdentity identity{};
  Irp* query =
      kernel::IoBuildDeviceIoControlRequest(bus::kIoctlBusQueryIdentity, notification.device,
                                            nullptr, 0, &identity, sizeof identity, true);
  if (query == nullptr ||
      kernel::IoCallDriverAndWait(notification.device, query) != Status::SUCCESS ||
      identity.kind != bus::PdoKind::kIpoibPort) {
    return;
  }
  kernel::DeviceObject* fdo = nullptr;
  if (kernel::IoCreateDevice(driver->object, sizeof(FdoExtension), nullptr, 0, &fdo) !=
      Status::SUCCESS) {
    return;
  }
  auto* port = new PortFdo;
  port->driver = driver;
  port->fdo = fdo;
  port->ca_guid = identity.ca_guid;
  port->port = identity.port;
  static_cast<FdoExtension*>(fdo->DeviceExtension)->port = port;
  kernel::ObReferenceObject(notification.device);
  port->pdo = kernel::IoAttachDeviceToDeviceStack(fdo, notification.device);
  if (port->pdo != notification.device) {
    // Something else sits over the PDO: verbs still go to the PDO itself.
    port->pdo = notification.device;
  }
  std::lock_guard guard(driver->mutex);
  driver->ports.push_back(port);
}

Status DriverEntry(kernel::DriverObject* object, void* context) {
  object->DriverExtension = context;
  for (auto& dispatch : object->MajorFunction) dispatch = &Dispatch;
  object->Unload = [](kernel::DriverObject*) {};
  object->NonBlockingIoctl = &kernel::IsIbatIoctlNonBlocking;  // the IBAT device's IOCTLs
  return Status::SUCCESS;
}

}  // namespace

Status LoadDriver(kernel::Node* node, Driver** out) {
  auto* driver = new Driver;
  driver->node = node;
  Status status = kernel::IoCreateDriver(node, "ipoib", &DriverEntry, driver, &driver->object);
  if (status != Status::SUCCESS) {
    delete driver;
    return status;
  }
  status = CreateIbatDevice(driver);
  if (status == Status::SUCCESS) {
    status = kernel::IoRegisterPlugPlayNotification(node, bus::kIpoibInterfaceClass, true,
                                                    &OnArrival, driver, &driver->registration);
  }
  if (status != Status::SUCCESS) {
    DeleteIbatDevice(driver);
    kernel::IoUnloadDriver(driver->object);
    delete driver;
    return status;
  }
  *out = driver;
  return Status::SUCCESS;
}

void UnloadDriver(Driver* driver) {
  if (driver->registration != nullptr) {
    kernel::IoUnregisterPlugPlayNotification(std::exchange(driver->registration, nullptr));
  }
  std::vector<Interface*> interfaces;
  {
    std::lock_guard guard(driver->mutex);
    interfaces = driver->interfaces;
  }
  for (Interface* i : interfaces) {
    if (i->team == nullptr) DestroyInterface(i);  // an LBFO member goes with its team
  }
  // The FDOs still attached: detached here (their PDOs stay with the bus).
  std::vector<PortFdo*> ports;
  {
    std::lock_guard guard(driver->mutex);
    ports = std::exchange(driver->ports, {});
  }
  for (PortFdo* port : ports) {
    kernel::IoDetachDevice(port->pdo);
    kernel::IoDeleteDevice(port->fdo);
    kernel::ObDereferenceObject(port->pdo);
    delete port;
  }
  DeleteIbatDevice(driver);
  kernel::IoUnloadDriver(driver->object);
  delete driver;
}

size_t AttachedPorts(Driver* driver) {
  std::lock_guard guard(driver->mutex);
  return driver->ports.size();
}

}  // namespace softib::ipoib
