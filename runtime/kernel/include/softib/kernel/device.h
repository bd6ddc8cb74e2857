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
  void* FsContext;   // the driver's per-open state (e.g. the AL instance and handle table)
  void* FsContext2;
};

}  // namespace softib::kernel
