// IO_WORKITEM: runs a routine at PASSIVE on one of the node's worker threads. The device
// object stays referenced while the item is queued or running, so a driver whose device is
// deleted meanwhile is not called into a freed object.
#pragma once

namespace softib::kernel {

struct DeviceObject;
struct IoWorkItem;

using IoWorkItemRoutine = void (*)(DeviceObject* device, void* context);

// A work item for `device` (its node's workers run it).
IoWorkItem* IoAllocateWorkItem(DeviceObject* device);

// Queues the item; queueing an item that is already queued is a verifier failure.
void IoQueueWorkItem(IoWorkItem* item, IoWorkItemRoutine routine, void* context);

// Frees an item that is not queued (the routine may free its own item).
void IoFreeWorkItem(IoWorkItem* item);

}  // namespace softib::kernel
