// Per-file handle tables and counted object references. Declarations only; the object
// manager of runtime/kernel implements them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "softib/abi/abi_objects.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/status.h"

namespace softib::kernel {

class Node;

// The header every AL object starts with (type, reference count, parent): runtime/kernel.
class KernelObject;

void ReferenceObject(KernelObject* object);
void DereferenceObject(KernelObject* object);

// A counted reference to a kernel object; releases it when destroyed. Move-only.
class ObjectRef {
 public:
  ObjectRef() = default;
  // Adopts a reference the caller already holds.
  explicit ObjectRef(KernelObject* adopted) : object_(adopted) {}
  ObjectRef(ObjectRef&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  ObjectRef& operator=(ObjectRef&& other) noexcept {
    if (this != &other) {
      Reset();
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  ObjectRef(const ObjectRef&) = delete;
  ObjectRef& operator=(const ObjectRef&) = delete;
  ~ObjectRef() { Reset(); }

  KernelObject* get() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }
  KernelObject* Release() { return std::exchange(object_, nullptr); }
  void Reset() {
    if (object_ != nullptr) DereferenceObject(std::exchange(object_, nullptr));
  }

 private:
  KernelObject* object_ = nullptr;
};

// How a verb uses the object a handle names (the IDL's handle access). A table may refuse
// kDestroy for an object already being destroyed.
enum class HandleAccess : uint8_t { kRead, kWrite, kDestroy };

// The handles of one file (a user process's open of the AL or a CA, or a kernel client's
// AL instance). A handle carries the object type, a generation and an index: a handle of
// another file, of another type, or of a destroyed object never resolves.
class HandleTable {
 public:
  virtual ~HandleTable() = default;

  // Resolves `handle` to a referenced object of `type`. Returns SUCCESS and sets *object,
  // or a failure status (the dispatch reports its own per-object invalid-handle status).
  virtual Status Lookup(uint64_t handle, abi::ObjectType type, HandleAccess access,
                        ObjectRef* object) = 0;
};

// The handle table of one file. A handle packs, from the top bit down:
//   [63:56] object type   [55:40] table tag   [39:20] generation   [19:0] slot index
// The tag is unique among the live tables of a node (handles of another file do not
// resolve); a slot's generation changes whenever its handle is removed (stale and destroyed
// handles do not resolve) and is never 0, so no handle is 0. Freed slots are reused
// oldest-first, to keep a removed handle's value out of circulation as long as possible.
class ObjectHandleTable final : public HandleTable {
 public:
  static constexpr int kIndexBits = 20;
  static constexpr int kGenerationBits = 20;
  static constexpr int kTagBits = 16;
  static constexpr uint32_t kMaxEntries = 1u << kIndexBits;

  // Takes a tag from `node`.
  explicit ObjectHandleTable(Node* node);
  // Tears down what is left (CloseAll) and returns the tag.
  ~ObjectHandleTable() override;
  ObjectHandleTable(const ObjectHandleTable&) = delete;
  ObjectHandleTable& operator=(const ObjectHandleTable&) = delete;

  // Publishes `object` under a new handle; the table takes its own reference.
  // INSUFFICIENT_RESOURCES when the table is full.
  Status Insert(KernelObject* object, uint64_t* handle);

  // INVALID_HANDLE for a handle that does not resolve (zero, garbage, another table's,
  // stale, wrong type); INVALID_STATE for kDestroy of an object already being destroyed.
  Status Lookup(uint64_t handle, abi::ObjectType type, HandleAccess access,
                ObjectRef* object) override;

  // The destroy verb: destroys the object and removes its handle. RESOURCE_BUSY while it
  // has children (the handle stays valid), INVALID_HANDLE when the handle does not resolve.
  Status Destroy(uint64_t handle, abi::ObjectType type);

  // The file-close teardown: destroys every object of the table, children before parents
  // (newest first, repeated until nothing is left). Objects whose children live elsewhere
  // are destroyed anyway once nothing else progresses; returns how many were forced.
  std::size_t CloseAll();
  // CloseAll in steps, for a teardown whose releases complete later (the AL's file cleanup,
  // whose objects give back what they hold in the HCA with IRPs): CloseIdle destroys every
  // object it can, newest first, repeated while that progresses, and returns how many are
  // left (busy with children); ForceNewest destroys the newest left despite its children
  // (false when none is left).
  std::size_t CloseIdle();
  bool ForceNewest();

  std::size_t size();
  uint16_t tag() const { return tag_; }

 private:
  struct Entry {
    KernelObject* object = nullptr;  // null when free
    uint32_t generation = 1;
    uint64_t sequence = 0;  // insertion order, for CloseAll
  };
  static uint64_t Pack(abi::ObjectType type, uint16_t tag, uint32_t generation, uint32_t index);
  // The entry `handle` names for `type`, or null (lock_ held).
  Entry* Resolve(uint64_t handle, abi::ObjectType type);
  // Frees the slot and returns the table's reference (lock_ held).
  KernelObject* Release(uint32_t index);

  Node* const node_;
  const uint16_t tag_;
  KSpinLock lock_;
  std::vector<Entry> entries_;
  std::deque<uint32_t> free_;
  std::size_t live_ = 0;
  uint64_t next_sequence_ = 0;
};

}  // namespace softib::kernel
