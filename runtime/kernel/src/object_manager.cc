// The object header: references, parent links, child counts, destroy-or-busy.
#include "softib/kernel/object.h"

#include <thread>

#include "softib/kernel/verifier.h"

namespace softib::kernel {

namespace {
constexpr uint32_t kDestroyed = 1;
constexpr uint32_t kMoving = 2;  // Reparent is swapping parent_
constexpr uint32_t kOneChild = 4;
}  // namespace

void ReferenceObject(KernelObject* object) {
  if (object->references_.fetch_add(1, std::memory_order_relaxed) == 0) {
    VerifierFail("ReferenceObject: object %p (%s) was already freed", object,
                 abi::ToString(object->type()));
  }
}

void DereferenceObject(KernelObject* object) {
  const uint32_t previous = object->references_.fetch_sub(1, std::memory_order_acq_rel);
  if (previous == 0) {
    VerifierFail("DereferenceObject: object %p (%s) has no reference", object,
                 abi::ToString(object->type()));
  }
  if (previous != 1) return;
  // Dropped without Destroy (e.g. a create that failed after SetParent): same teardown.
  if ((object->state_.fetch_or(kDestroyed, std::memory_order_acq_rel) & kDestroyed) == 0) {
    object->FinishDestroy();
  }
  KernelObject* parent = object->parent_;
  delete object;
  if (parent != nullptr) DereferenceObject(parent);
}

Status KernelObject::SetParent(KernelObject* parent) {
  if (parent_ != nullptr) VerifierFail("SetParent: object %p already has a parent", this);
  if (!parent->TryAddChild()) return Status::INVALID_STATE;
  ReferenceObject(parent);
  parent_ = parent;
  return Status::SUCCESS;
}

Status KernelObject::Reparent(KernelObject* new_parent) {
  if (new_parent == nullptr || parent_ == nullptr) {
    VerifierFail("Reparent: object %p (%s) without a parent or to none", this,
                 abi::ToString(type_));
  }
  uint32_t state = state_.load(std::memory_order_acquire);
  do {
    if ((state & kDestroyed) != 0) return Status::INVALID_STATE;
    if ((state & kMoving) != 0) return Status::RESOURCE_BUSY;
  } while (!state_.compare_exchange_weak(state, state | kMoving, std::memory_order_acq_rel));
  if (new_parent == parent_) {
    state_.fetch_and(~kMoving, std::memory_order_acq_rel);
    return Status::SUCCESS;
  }
  if (!new_parent->TryAddChild()) {
    state_.fetch_and(~kMoving, std::memory_order_acq_rel);
    return Status::INVALID_STATE;
  }
  ReferenceObject(new_parent);
  KernelObject* old = parent_;
  parent_ = new_parent;
  // Published by the release: FinishDestroy reads parent_ only once the bit is clear.
  state_.fetch_and(~kMoving, std::memory_order_acq_rel);
  old->RemoveChild();
  DereferenceObject(old);
  return Status::SUCCESS;
}

bool KernelObject::TryAddChild() {
  uint32_t state = state_.load(std::memory_order_acquire);
  do {
    if ((state & kDestroyed) != 0) return false;
  } while (!state_.compare_exchange_weak(state, state + kOneChild, std::memory_order_acq_rel));
  return true;
}

void KernelObject::RemoveChild() {
  if (state_.fetch_sub(kOneChild, std::memory_order_acq_rel) < kOneChild) {
    VerifierFail("RemoveChild: object %p (%s) has no child", this, abi::ToString(type_));
  }
}

Status KernelObject::Destroy() {
  uint32_t idle = 0;  // no children, not destroyed: the only state that may be destroyed
  if (!state_.compare_exchange_strong(idle, kDestroyed, std::memory_order_acq_rel)) {
    return (idle & kDestroyed) != 0 ? Status::INVALID_STATE : Status::RESOURCE_BUSY;
  }
  FinishDestroy();
  return Status::SUCCESS;
}

void KernelObject::ForceDestroy() {
  if ((state_.fetch_or(kDestroyed, std::memory_order_acq_rel) & kDestroyed) == 0) {
    FinishDestroy();
  }
}

void KernelObject::FinishDestroy() {
  // A ForceDestroy racing a Reparent: the move is a few stores, wait for it to land.
  while ((state_.load(std::memory_order_acquire) & kMoving) != 0) std::this_thread::yield();
  OnDestroy();
  if (parent_ != nullptr) parent_->RemoveChild();
}

}  // namespace softib::kernel
