// IO_WORKITEM: runs a routine at PASSIVE on one of the node's worker threads. The device
// object stays referenced while the item is queued or running, so a driver whose device is
// deleted meanwhile is not called into a freed object.
#pragma once

namespace softib::kernel {

class Node;
struct DeviceObject;
struct IoWorkItem;

using IoWorkItemRoutine = void (*)(DeviceObject* device, void* context);

// A work item for `device` (its node's workers run it).
IoWorkItem* IoAllocateWorkItem(DeviceObject* device);

// Queues the item; queueing an item that is already queued is a verifier failure.
void IoQueueWorkItem(IoWorkItem* item, IoWorkItemRoutine routine, void* context);

// Frees an item that is not queued (the routine may free its own item).
void IoFreeWorkItem(IoWorkItem* item);

// Waits until the node's workers are idle: every work item queued before the call has run,
// and so has whatever it queued in turn (PnP notifications are delivered by work items
// too). Work that other threads keep queueing meanwhile delays the return. PASSIVE only, and
// never from one of the node's work items (it would wait for itself). The counterpart of
// KeFlushQueuedDpcs: a barrier for tests ("nothing was delivered" once it returns).
void IoFlushQueuedWorkItems(Node* node);

}  // namespace softib::kernel
