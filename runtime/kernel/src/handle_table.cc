// Per-file handle tables (layout in handle_table.h) and the node's table tags.
#include <algorithm>

#include "node_impl.h"
#include "softib/kernel/handle_table.h"
#include "softib/kernel/object.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {
namespace {

constexpr uint32_t kIndexMask = (1u << ObjectHandleTable::kIndexBits) - 1;
constexpr uint32_t kGenerationMask = (1u << ObjectHandleTable::kGenerationBits) - 1;
constexpr int kGenerationShift = ObjectHandleTable::kIndexBits;
constexpr int kTagShift = kGenerationShift + ObjectHandleTable::kGenerationBits;
constexpr int kTypeShift = kTagShift + ObjectHandleTable::kTagBits;
static_assert(kTypeShift + 8 == 64);

uint32_t NextGeneration(uint32_t generation) {
  const uint32_t next = (generation + 1) & kGenerationMask;
  return next == 0 ? 1 : next;  // 0 would allow a zero handle
}

}  // namespace

uint16_t TagAllocator::Allocate() {
  std::lock_guard lock(mutex);
  if (next <= 0xffff) return static_cast<uint16_t>(next++);
  if (free.empty()) VerifierFail("handle tables: all 65535 tags of the node are in use");
  const uint16_t tag = free.front();
  free.pop_front();
  return tag;
}

void TagAllocator::Free(uint16_t tag) {
  std::lock_guard lock(mutex);
  free.push_back(tag);
}

ObjectHandleTable::ObjectHandleTable(Node* node)
    : node_(node), tag_(node->impl().tags.Allocate()) {}

ObjectHandleTable::~ObjectHandleTable() {
  CloseAll();
  node_->impl().tags.Free(tag_);
}

uint64_t ObjectHandleTable::Pack(abi::ObjectType type, uint16_t tag, uint32_t generation,
                                 uint32_t index) {
  return (uint64_t{static_cast<uint8_t>(type)} << kTypeShift) | (uint64_t{tag} << kTagShift) |
         (uint64_t{generation} << kGenerationShift) | index;
}

Status ObjectHandleTable::Insert(KernelObject* object, uint64_t* handle) {
  SpinLockGuard guard(lock_);
  uint32_t index;
  if (!free_.empty()) {
    index = free_.front();
    free_.pop_front();
  } else if (entries_.size() < kMaxEntries) {
    index = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  } else {
    return Status::INSUFFICIENT_RESOURCES;
  }
  Entry& entry = entries_[index];
  ReferenceObject(object);
  entry.object = object;
  entry.sequence = next_sequence_++;
  ++live_;
  *handle = Pack(object->type(), tag_, entry.generation, index);
  return Status::SUCCESS;
}

ObjectHandleTable::Entry* ObjectHandleTable::Resolve(uint64_t handle, abi::ObjectType type) {
  const uint32_t index = handle & kIndexMask;
  const uint32_t generation = (handle >> kGenerationShift) & kGenerationMask;
  const auto tag = static_cast<uint16_t>(handle >> kTagShift);
  const auto handle_type = static_cast<uint8_t>(handle >> kTypeShift);
  if (handle_type != static_cast<uint8_t>(type) || tag != tag_ || index >= entries_.size()) {
    return nullptr;
  }
  Entry& entry = entries_[index];
  if (entry.object == nullptr || entry.generation != generation || entry.object->type() != type) {
    return nullptr;
  }
  return &entry;
}

KernelObject* ObjectHandleTable::Release(uint32_t index) {
  Entry& entry = entries_[index];
  KernelObject* object = entry.object;
  entry.object = nullptr;
  entry.generation = NextGeneration(entry.generation);
  free_.push_back(index);
  --live_;
  return object;
}

Status ObjectHandleTable::Lookup(uint64_t handle, abi::ObjectType type, HandleAccess access,
                                 ObjectRef* object) {
  SpinLockGuard guard(lock_);
  Entry* entry = Resolve(handle, type);
  if (entry == nullptr) return Status::INVALID_HANDLE;
  if (access == HandleAccess::kDestroy && entry->object->destroyed()) {
    return Status::INVALID_STATE;
  }
  ReferenceObject(entry->object);
  *object = ObjectRef(entry->object);
  return Status::SUCCESS;
}

Status ObjectHandleTable::Destroy(uint64_t handle, abi::ObjectType type) {
  KernelObject* object;
  uint32_t index;
  {
    SpinLockGuard guard(lock_);
    Entry* entry = Resolve(handle, type);
    if (entry == nullptr) return Status::INVALID_HANDLE;
    object = entry->object;
    index = static_cast<uint32_t>(entry - entries_.data());
    ReferenceObject(object);
  }
  ObjectRef hold(object);
  // Destroy outside the lock: OnDestroy may call back into this table.
  const Status status = object->Destroy();
  if (status != Status::SUCCESS) return status;
  KernelObject* released = nullptr;
  {
    SpinLockGuard guard(lock_);
    const Entry& entry = entries_[index];
    if (entry.object == object) released = Release(index);
  }
  if (released != nullptr) DereferenceObject(released);
  return Status::SUCCESS;
}

std::size_t ObjectHandleTable::CloseAll() {
  std::size_t forced = 0;
  while (CloseIdle() != 0) {
    if (ForceNewest()) ++forced;
  }
  return forced;
}

std::size_t ObjectHandleTable::CloseIdle() {
  for (;;) {
    // Newest first: children were created after their parents.
    std::vector<std::pair<uint64_t, uint32_t>> order;  // (sequence, index)
    {
      SpinLockGuard guard(lock_);
      if (live_ == 0) return 0;
      for (uint32_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i].object != nullptr) order.emplace_back(entries_[i].sequence, i);
      }
    }
    std::sort(order.rbegin(), order.rend());
    bool progress = false;
    for (const auto& [sequence, index] : order) {
      KernelObject* object;
      {
        SpinLockGuard guard(lock_);
        object = entries_[index].object;
        if (object == nullptr || entries_[index].sequence != sequence) continue;
        ReferenceObject(object);
      }
      ObjectRef hold(object);
      if (object->Destroy() == Status::RESOURCE_BUSY) continue;  // its children go first
      KernelObject* released = nullptr;
      {
        SpinLockGuard guard(lock_);
        if (entries_[index].object == object) released = Release(index);
      }
      if (released != nullptr) DereferenceObject(released);
      progress = true;
    }
    if (!progress) return order.size();
  }
}

bool ObjectHandleTable::ForceNewest() {
  // Children that live outside this table hold the rest: destroy the newest anyway.
  KernelObject* released = nullptr;
  {
    SpinLockGuard guard(lock_);
    uint64_t newest = 0;
    uint32_t index = 0;
    bool found = false;
    for (uint32_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].object != nullptr && (!found || entries_[i].sequence > newest)) {
        newest = entries_[i].sequence;
        index = i;
        found = true;
      }
    }
    if (found) released = Release(index);
  }
  if (released == nullptr) return false;
  released->ForceDestroy();
  DereferenceObject(released);
  return true;
}

std::size_t ObjectHandleTable::size() {
  SpinLockGuard guard(lock_);
  return live_;
}

}  // namespace softib::kernel
