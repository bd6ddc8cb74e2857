// Driver, device and file objects, modelled on WDM. Implemented (creation, device stacks,
// reference counts) by runtime/kernel; the fields here are what dispatch code reads.
#pragma once

#include <cstdint>

#include "softib/kernel/irp.h"
#include "softib/kernel/status.h"

namespace softib::kernel {

class Node;  // one simulated host: owns every kernel object below
struct DriverObject;

using DriverDispatch = Status (*)(DeviceObject* device, Irp* irp);
using DriverUnload = void (*)(DriverObject* driver);

struct DriverObject {
  Node* node;
  const char* DriverName;
  DriverDispatch MajorFunction[kIrpMajorCount];
  DriverUnload Unload;
  void* DriverExtension;
  // Optional, the role of Windows' FastIoDispatch for device control: true when the
  // driver's IRP_MJ_DEVICE_CONTROL for `code` never blocks (it completes or pends the IRP),
  // so a sender on a thread that must not block (the bridge's channel loop) may call
  // IoCallDriver itself instead of handing the IRP to a worker thread.
  bool (*NonBlockingIoctl)(uint32_t code);
};

struct DeviceObject {
  ::softib::kernel::DriverObject* DriverObject;
  DeviceObject* AttachedDevice;  // the next device up the stack (FDO over PDO)
  int8_t StackSize;              // stack locations an IRP sent here needs
  uint32_t DeviceType;
  uint32_t Flags;
  void* DeviceExtension;
};

// One open of a device (a user process's open file, or a kernel client's).
struct FileObject {
  ::softib::kernel::DeviceObject* DeviceObject;
  void* FsContext;  // the driver's per-open state (e.g. the AL instance and handle table)
  void* FsContext2;
  ProcessorMode RequestorMode;  // who opened it
  int32_t ProcessId;            // the opening user process (Linux pid); 0 for kernel opens
  // Added to an address of the opening process to reach its own memory (process_vm_readv):
  // 0 natively, qemu's guest base for a 32-bit process under qemu-i386. Set by the driver
  // that learns it from the process (the AL's GetFileAl); read by the HCA driver, which
  // reaches a user-mode requestor's memory through the IRP's file (idl/ci.idl).
  uint64_t DmaAddressOffset;
};

// ---- Drivers ----
// DriverEntry: fills MajorFunction and Unload, usually creates devices.
using DriverInitialize = Status (*)(DriverObject* driver, void* context);

// Creates a driver object on `node` and runs `init` on it; on failure nothing remains.
Status IoCreateDriver(Node* node, const char* name, DriverInitialize init, void* context,
                      DriverObject** driver);

// Calls the driver's Unload (which deletes its devices). The driver object itself lives
// until its last device object is freed. PASSIVE only.
void IoUnloadDriver(DriverObject* driver);

// ---- Devices ----
// Creates a device of `driver` with a zeroed extension of `extension_size` bytes (16-byte
// aligned) and StackSize 1. A non-null `name` enters the node's namespace (IoCreateFile
// opens it); a taken name answers RESOURCE_BUSY. The creator holds one reference, which
// IoDeleteDevice drops.
Status IoCreateDevice(DriverObject* driver, uint32_t extension_size, const char* name,
                      uint32_t device_type, DeviceObject** device);

// Removes the name and raises PnP removal for the device's enabled interfaces; the object
// is freed when its last reference goes (IRPs already sent may still reach the driver).
// The device must be detached from the device below it first.
void IoDeleteDevice(DeviceObject* device);

// Puts `source` on top of the stack that `target` belongs to; returns the device it went
// over (the old top), whose StackSize + 1 becomes source's StackSize. The source holds a
// reference on that device until IoDetachDevice.
DeviceObject* IoAttachDeviceToDeviceStack(DeviceObject* source, DeviceObject* target);

// Detaches whatever is attached on `lower` (the value IoAttachDeviceToDeviceStack returned).
void IoDetachDevice(DeviceObject* lower);

// The top of the stack `device` belongs to, referenced.
DeviceObject* IoGetAttachedDeviceReference(DeviceObject* device);

// The named device of `node`, referenced; null when there is none (or it was deleted).
DeviceObject* IoGetDeviceByName(Node* node, const char* name);

// Device reference counts (ObReferenceObject/ObDereferenceObject on a device object).
void ObReferenceObject(DeviceObject* device);
void ObDereferenceObject(DeviceObject* device);

inline Node* IoGetDeviceNode(DeviceObject* device) { return device->DriverObject->node; }

// ---- Files ----
// Opens the named device: the file goes to the top of its stack, which gets an
// IRP_MJ_CREATE (RequestorMode `mode`); a failing create status is returned and no file
// remains. PASSIVE only.
Status IoCreateFile(Node* node, const char* device_name, ProcessorMode mode, FileObject** file);

// The same for a user-mode open on behalf of process `pid` (the HCA reaches that process's
// memory by pid, and the open's owner is known from IRP_MJ_CREATE on).
Status IoCreateFileForProcess(Node* node, const char* device_name, int32_t pid, FileObject** file);

// Sends IRP_MJ_CLEANUP then IRP_MJ_CLOSE to the file's device, then drops the file and its
// device reference. PASSIVE only.
void IoCloseFile(FileObject* file);

}  // namespace softib::kernel
