// The PDOs of the bus driver (IPoIB and IOU PDOs, created by the bus's driver object) and
// of the IOU FDO (IOC PDOs, created by the IOU driver's object): their extension and
// dispatch.
#pragma once

#include <atomic>

#include "softib/bus/bus_driver.h"
#include "softib/kernel/device.h"

namespace softib::bus {

// The first word of every device extension of the bus library's drivers: the IOU driver's
// object serves both its FDOs and its IOC PDOs, and tells them apart by it.
enum class DeviceTag : uint32_t { kPdo = 0x50444F31, kIouFdo = 0x494F5546 };

struct PdoExtension {
  DeviceTag tag;
  // The PdoIdentity in identity.pdo; the rest is the IOC PDOs'.
  IocIdentity identity;
  // Where verb IRPs go (the bus holds the reference); null: answered UNSUPPORTED.
  kernel::DeviceObject* verb_target;
  // Set (before the REMOVE goes down) once the PDO's CA is gone.
  std::atomic<bool> ca_removed;
};

inline DeviceTag TagOf(kernel::DeviceObject* device) {
  return *static_cast<const DeviceTag*>(device->DeviceExtension);
}

// Installs the PDO dispatch routines in the bus driver object.
void InstallPdoDispatch(kernel::DriverObject* driver);

// The PDO dispatch, for a driver whose routines serve other devices too.
kernel::Status DispatchPdo(kernel::DeviceObject* pdo, kernel::Irp* irp);

// Creates a PDO named `name` with `identity` (an IPoIB or IOU PDO: only identity.pdo
// counts), forwarding verb IRPs to `verb_target` (may be null), and enables
// `interface_class` on it (the arrival ULP drivers hear). PASSIVE.
kernel::Status CreatePdo(kernel::DriverObject* driver, const std::string& name,
                         const IocIdentity& identity, kernel::DeviceObject* verb_target,
                         const char* interface_class, kernel::DeviceObject** pdo);

// From now on the PDO completes the IRPs it would forward with CA_REMOVED.
void MarkPdoCaRemoved(kernel::DeviceObject* pdo);

// Sends IRP_MN_REMOVE_DEVICE down the PDO's stack (function drivers over it let go first),
// disables its interface (the removal ULP clients hear) and deletes it. PASSIVE.
void RemovePdo(kernel::DeviceObject* pdo, const char* interface_class);

// ---- The IOU FDO (iou_fdo.cc) ----
struct IouDriver;
// Loads the IOU driver: it hears every softib.iou interface arrival and attaches an FDO
// over that IOU PDO, which opens the device `verb_device_name` (the AL) for itself.
kernel::Status LoadIouDriver(kernel::Node* node, const std::string& verb_device_name,
                             kernel::DeviceObject* verb_device, IouDriver** out);
// Stops listening for IOU PDOs: no FDO attaches afterwards (those attached keep serving
// until their PDO's REMOVE). PASSIVE.
void StopIouArrivals(IouDriver* driver);
// Stops listening (if not done yet) and unloads; the IOU PDOs (so the FDOs) must be gone.
// PASSIVE.
void UnloadIouDriver(IouDriver* driver);
// IOC PDOs currently enumerated by the FDOs of the driver.
size_t IouIocPdoCount(IouDriver* driver);

}  // namespace softib::bus
