// The PDOs of the bus driver: their extension and dispatch.
#pragma once

#include <atomic>

#include "softib/bus/bus_driver.h"
#include "softib/kernel/device.h"

namespace softib::bus {

struct PdoExtension {
  PdoIdentity identity;
  // Where verb IRPs go (the bus holds the reference); null: answered UNSUPPORTED.
  kernel::DeviceObject* verb_target;
  // Set (before the REMOVE goes down) once the PDO's CA is gone.
  std::atomic<bool> ca_removed;
};

// Installs the PDO dispatch routines in the bus driver object.
void InstallPdoDispatch(kernel::DriverObject* driver);

// Creates a PDO named `name` with `identity`, forwarding verb IRPs to `verb_target` (may
// be null), and enables `interface_class` on it (the arrival ULP drivers hear). PASSIVE.
kernel::Status CreatePdo(kernel::DriverObject* driver, const std::string& name,
                         const PdoIdentity& identity, kernel::DeviceObject* verb_target,
                         const char* interface_class, kernel::DeviceObject** pdo);

// From now on the PDO completes the IRPs it would forward with CA_REMOVED.
void MarkPdoCaRemoved(kernel::DeviceObject* pdo);

// Sends IRP_MN_REMOVE_DEVICE down the PDO's stack (function drivers over it let go first),
// disables its interface (the removal ULP clients hear) and deletes it. PASSIVE.
void RemovePdo(kernel::DeviceObject* pdo, const char* interface_class);

}  // namespace softib::bus
