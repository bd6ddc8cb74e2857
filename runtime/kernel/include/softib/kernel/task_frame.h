// Coroutine frames of the kernel's tasks (IrpTask, VerbTask) from a per-thread free list.
//
// Why: since issue 17 every AL verb that reaches the HCA driver runs in a coroutine, and
// each coroutine's frame was a malloc + free per verb — the largest single cost the IRP path
// added to a control verb (CreateQp → ModifyQp ×3 → DestroyQp paid four). A frame is freed
// on whatever thread finishes the task (the caller's when every IRP completed inline, else
// the DPC's that completed the last one) into that thread's list, and taken from the
// allocating thread's list, so neither side takes a lock: a block is plain heap memory,
// any thread may give it back to the heap.
//
// Frames are grouped in size classes of kTaskFrameGranule bytes up to kTaskFrameMaxPooled;
// larger ones come from the heap directly. A thread keeps at most kTaskFrameDepth blocks of a
// class (a burst frees the rest) and gives its blocks back to the heap when it exits.
// Under AddressSanitizer a cached block is poisoned, so a use after the frame's free is
// still reported.
#pragma once

#include <cstddef>
#include <cstdint>

namespace softib::kernel {

inline constexpr std::size_t kTaskFrameGranule = 64;
inline constexpr std::size_t kTaskFrameMaxPooled = 1024;
inline constexpr std::size_t kTaskFrameDepth = 16;

// A block of at least `size` bytes (default new alignment); throws std::bad_alloc as
// operator new does (a kernel task's frame failing to allocate terminates).
void* AllocateTaskFrame(std::size_t size);
// Gives back a block of AllocateTaskFrame(size), on any thread.
void FreeTaskFrame(void* frame, std::size_t size) noexcept;

// For tests: the calling thread's cached blocks of the class of `size`, and the blocks the
// pool holds from the heap over all threads (in use or cached; pooled sizes only).
std::size_t TaskFramesCachedForSize(std::size_t size);
int64_t TaskFrameHeapBlocks();

}  // namespace softib::kernel
