// Per-file handle tables and counted object references. Declarations only; the object
// manager of runtime/kernel implements them.
#pragma once

#include <cstdint>
#include <utility>

#include "softib/abi/abi_objects.h"
#include "softib/kernel/status.h"

namespace softib::kernel {

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

}  // namespace softib::kernel
