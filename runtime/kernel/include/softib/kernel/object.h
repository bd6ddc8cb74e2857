// The object header of every AL object (CA, PD, QP, ...): type, reference count, parent and
// child count. Destroying an object that still has children answers RESOURCE_BUSY instead
// of cascading; only a file's teardown (ObjectHandleTable::CloseAll) walks the tree.
#pragma once

#include <atomic>
#include <cstdint>

#include "softib/abi/abi_objects.h"
#include "softib/kernel/handle_table.h"
#include "softib/kernel/status.h"

namespace softib::kernel {

// Allocated with new; the last DereferenceObject deletes it (and then drops its parent).
class KernelObject {
 public:
  // The creator holds the first reference.
  explicit KernelObject(abi::ObjectType type) : type_(type) {}
  virtual ~KernelObject() = default;
  KernelObject(const KernelObject&) = delete;
  KernelObject& operator=(const KernelObject&) = delete;

  abi::ObjectType type() const { return type_; }
  KernelObject* parent() const { return parent_; }

  // Links this object under `parent`, once, before it is published: the parent gains a
  // child and a reference (kept until this object is freed). INVALID_STATE when the parent
  // is already destroyed.
  Status SetParent(KernelObject* parent);

  // Moves this object under `new_parent` (re-registering a region into another PD): the
  // new parent gains a child and a reference, the old one loses both. While it moves, a
  // Destroy of this object answers RESOURCE_BUSY (and a ForceDestroy waits for the move),
  // as does a second Reparent. INVALID_STATE when this object or `new_parent` is destroyed.
  // The caller holds a reference on both. Any IRQL (no allocation, no blocking).
  Status Reparent(KernelObject* new_parent);

  // Children, and dependents that are not children (a QP using a CQ counts on the CQ).
  // TryAddChild fails once the object is destroyed.
  bool TryAddChild();
  void RemoveChild();
  uint32_t child_count() const { return state_.load(std::memory_order_acquire) >> 2; }

  uint32_t reference_count() const { return references_.load(std::memory_order_acquire); }
  bool destroyed() const { return (state_.load(std::memory_order_acquire) & 1) != 0; }

  // Starts destruction: SUCCESS (OnDestroy has run and the parent lost this child),
  // RESOURCE_BUSY while there are children, INVALID_STATE when already destroyed. The memory
  // goes with the last reference.
  Status Destroy();
  // Destruction despite children (teardown of a file when nothing else progresses).
  void ForceDestroy();

 protected:
  // Releases what the object holds (dependents it counted, resources). Runs exactly once,
  // without locks of the object manager held; also for an object freed without Destroy.
  virtual void OnDestroy() {}

 private:
  friend void ReferenceObject(KernelObject* object);
  friend void DereferenceObject(KernelObject* object);
  void FinishDestroy();

  const abi::ObjectType type_;
  KernelObject* parent_ = nullptr;
  std::atomic<uint32_t> references_{1};
  // child count << 2 | moving (Reparent) << 1 | destroyed
  std::atomic<uint32_t> state_{0};
};

}  // namespace softib::kernel
