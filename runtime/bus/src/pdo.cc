// PDO dispatch: opens succeed (a ULP opens its PDO), the identity query answers what the
// PDO stands for, a removal at the bottom of the stack completes, and every other
// device-control IRP is forwarded to the device that carries the verbs.
#include "pdo.h"

#include <cstring>
#include <new>

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

// The parent of a PDO, for the verbs, is the AL device and not the AL's filter over the
// CA's device: the verbs name their CA (and every object) by handle in the sender's own
// handle table, which the AL finds from the IRP's file (the sender's AL open), so the AL
// device serves every verb of every CA, including OpenCa, which a filter of another CA
// would serve just the same; the filter adds nothing but a second route to the same
// dispatch, and it goes away with its CA while the PDO may still be asked. The IRP keeps
// its stack location (skip): the target sees the sender's file, code and buffers as sent.
Status Forward(kernel::DeviceObject* pdo, kernel::Irp* irp) {
  PdoExtension* ext = ExtensionOf(pdo);
  if (ext->verb_target == nullptr) return Complete(irp, Status::UNSUPPORTED);
  if (ext->ca_removed.load(std::memory_order_acquire)) return Complete(irp, Status::CA_REMOVED);
  kernel::IoSkipCurrentIrpStackLocation(irp);
  return kernel::IoCallDriver(ext->verb_target, irp);
}

Status DispatchControl(kernel::DeviceObject* pdo, kernel::Irp* irp) { return Forward(pdo, irp); }

// The identity: an IOC PDO's whole IocIdentity when the buffer holds it, else (and for the
// other PDOs) the PdoIdentity prefix.
Status DispatchInternalControl(kernel::DeviceObject* pdo, kernel::Irp* irp) {
  const auto& params = kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl;
  if (params.IoControlCode != kIoctlBusQueryIdentity) return Forward(pdo, irp);
  if (params.OutputBufferLength < sizeof(PdoIdentity)) {
    return Complete(irp, Status::INVALID_PARAMETER);
  }
  const IocIdentity& identity = ExtensionOf(pdo)->identity;
  const uint32_t length =
      identity.pdo.kind == PdoKind::kIoc && params.OutputBufferLength >= sizeof(IocIdentity)
          ? sizeof(IocIdentity)
          : sizeof(PdoIdentity);
  std::memcpy(irp->AssociatedIrp.SystemBuffer, &identity, length);
  return Complete(irp, Status::SUCCESS, length);
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

Status DispatchPdo(kernel::DeviceObject* pdo, kernel::Irp* irp) {
  using kernel::IrpMajor;
  switch (kernel::IoGetCurrentIrpStackLocation(irp)->MajorFunction) {
    case IrpMajor::kCreate:
    case IrpMajor::kCleanup:
    case IrpMajor::kClose:
      return DispatchCreateClose(pdo, irp);
    case IrpMajor::kDeviceControl:
      return DispatchControl(pdo, irp);
    case IrpMajor::kInternalDeviceControl:
      return DispatchInternalControl(pdo, irp);
    case IrpMajor::kPnp:
      return DispatchPnp(pdo, irp);
  }
  return Complete(irp, Status::UNSUPPORTED);
}

void InstallPdoDispatch(kernel::DriverObject* driver) {
  using kernel::IrpMajor;
  driver->MajorFunction[static_cast<int>(IrpMajor::kCreate)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(IrpMajor::kCleanup)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(IrpMajor::kClose)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(IrpMajor::kDeviceControl)] = &DispatchControl;
  driver->MajorFunction[static_cast<int>(IrpMajor::kInternalDeviceControl)] =
      &DispatchInternalControl;
  driver->MajorFunction[static_cast<int>(IrpMajor::kPnp)] = &DispatchPnp;
}

Status CreatePdo(kernel::DriverObject* driver, const std::string& name, const IocIdentity& identity,
                 kernel::DeviceObject* verb_target, const char* interface_class,
                 kernel::DeviceObject** pdo) {
  kernel::DeviceObject* device = nullptr;
  Status status = kernel::IoCreateDevice(driver, sizeof(PdoExtension), name.c_str(), 0, &device);
  if (status != Status::SUCCESS) return status;
  PdoExtension* ext = new (device->DeviceExtension) PdoExtension{};
  ext->tag = DeviceTag::kPdo;
  ext->identity = identity;
  ext->verb_target = verb_target;
  // The forwarded IRP needs the target's locations besides the PDO's own; set before the
  // interface arrival, so an FDO attaching over the PDO gets one more than this.
  if (verb_target != nullptr) device->StackSize = static_cast<int8_t>(verb_target->StackSize + 1);
  status = kernel::IoSetDeviceInterfaceState(device, interface_class, true);
  if (status != Status::SUCCESS) {
    kernel::IoDeleteDevice(device);
    return status;
  }
  *pdo = device;
  return Status::SUCCESS;
}

void MarkPdoCaRemoved(kernel::DeviceObject* pdo) {
  ExtensionOf(pdo)->ca_removed.store(true, std::memory_order_release);
}

void RemovePdo(kernel::DeviceObject* pdo, const char* interface_class) {
  SendRemove(pdo);
  kernel::IoSetDeviceInterfaceState(pdo, interface_class, false);
  kernel::IoDeleteDevice(pdo);
}

}  // namespace softib::bus
