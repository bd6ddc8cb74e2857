// Deferred procedure calls: queued from any IRQL, run at DISPATCH on the node's DPC thread
// in FIFO order. One DPC thread per node, so DPCs of a node never run concurrently with
// each other (they do run concurrently with PASSIVE threads).
#pragma once

namespace softib::kernel {

class Node;
struct Kdpc;

using DeferredRoutine = void (*)(Kdpc* dpc, void* context, void* arg1, void* arg2);

// KDPC. Initialize with KeInitializeDpc; the fields below `context` belong to the node.
struct Kdpc {
  DeferredRoutine routine = nullptr;
  void* context = nullptr;
  Node* node = nullptr;
  void* arg1 = nullptr;
  void* arg2 = nullptr;
  bool queued = false;
};

void KeInitializeDpc(Kdpc* dpc, Node* node, DeferredRoutine routine, void* context);

// Queues `dpc` with the arguments; false (and nothing changes) when it is already queued.
bool KeInsertQueueDpc(Kdpc* dpc, void* arg1, void* arg2);

// Dequeues `dpc` if it has not started; true when it was queued.
bool KeRemoveQueueDpc(Kdpc* dpc);

// Waits until every DPC queued on `node` before the call has run (PASSIVE/APC only). After
// KeCancelTimer + KeFlushQueuedDpcs, a timer's DPC can be freed.
void KeFlushQueuedDpcs(Node* node);

}  // namespace softib::kernel
