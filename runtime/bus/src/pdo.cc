// PDO dispatch: opens succeed (a ULP opens its PDO), the identity query answers what the
// PDO stands for, and a removal at the bottom of the stack completes.
#include "pdo.h"

#include <cstring>

#include "softib/kernel/io.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/pnp.h"

namespace softib::bus {
namespace {

using kernel::Status;

Status Complete(kernel::Irp* irp, Status status, uint64_t information = 0) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = information;
  kernel::IoCompleteRequest(irp);
  return status;
}

PdoExtension* ExtensionOf(kernel::DeviceObject* pdo) {
  return static_cast<PdoExtension*>(pdo->DeviceExtension);
}

Status DispatchCreateClose(kernel::DeviceObject*, kernel::Irp* irp) {
  return Complete(irp, Status::SUCCESS);
}

Status DispatchInternalControl(kernel::DeviceObject* pdo, kernel::Irp* irp) {
  const auto& params = kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl;
  if (params.IoControlCode != kIoctlBusQueryIdentity) return Complete(irp, Status::UNSUPPORTED);
  if (params.OutputBufferLength < sizeof(PdoIdentity)) {
    return Complete(irp, Status::INVALID_PARAMETER);
  }
  std::memcpy(irp->AssociatedIrp.SystemBuffer, &ExtensionOf(pdo)->identity, sizeof(PdoIdentity));
  return Complete(irp, Status::SUCCESS, sizeof(PdoIdentity));
}

Status DispatchPnp(kernel::DeviceObject*, kernel::Irp* irp) {
  const bool remove =
      kernel::IoGetCurrentIrpStackLocation(irp)->MinorFunction == kernel::kIrpMinorRemoveDevice;
  return Complete(irp, remove ? Status::SUCCESS : Status::UNSUPPORTED);
}

void SendRemove(kernel::DeviceObject* pdo) {
  kernel::DeviceObject* top = kernel::IoGetAttachedDeviceReference(pdo);
  kernel::Irp* irp = kernel::IoAllocateIrp(top->StackSize);
  kernel::IoStackLocation* next = kernel::IoGetNextIrpStackLocation(irp);
  next->MajorFunction = kernel::IrpMajor::kPnp;
  next->MinorFunction = kernel::kIrpMinorRemoveDevice;
  kernel::IoCallDriverAndWait(top, irp);
  kernel::IoFreeIrp(irp);
  kernel::ObDereferenceObject(top);
}

}  // namespace

void InstallPdoDispatch(kernel::DriverObject* driver) {
  using kernel::IrpMajor;
  driver->MajorFunction[static_cast<int>(IrpMajor::kCreate)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(IrpMajor::kCleanup)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(IrpMajor::kClose)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(IrpMajor::kInternalDeviceControl)] =
      &DispatchInternalControl;
  driver->MajorFunction[static_cast<int>(IrpMajor::kPnp)] = &DispatchPnp;
}

Status CreatePdo(kernel::DriverObject* driver, const std::string& name, const PdoIdentity& identity,
                 const char* interface_class, kernel::DeviceObject** pdo) {
  kernel::DeviceObject* device = nullptr;
  Status status = kernel::IoCreateDevice(driver, sizeof(PdoExtension), name.c_str(), 0, &device);
  if (status != Status::SUCCESS) return status;
  ExtensionOf(device)->identity = identity;
  status = kernel::IoSetDeviceInterfaceState(device, interface_class, true);
  if (status != Status::SUCCESS) {
    kernel::IoDeleteDevice(device);
    return status;
  }
  *pdo = device;
  return Status::SUCCESS;
}

void RemovePdo(kernel::DeviceObject* pdo, const char* interface_class) {
  SendRemove(pdo);
  kernel::IoSetDeviceInterfaceState(pdo, interface_class, false);
  kernel::IoDeleteDevice(pdo);
}

}  // namespace softib::bus
