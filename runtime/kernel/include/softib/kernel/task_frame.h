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

namespace task_frame_internal {

inline constexpr std::size_t kClasses = kTaskFrameMaxPooled / kTaskFrameGranule;
inline constexpr std::size_t ClassOf(std::size_t size) {
  return size == 0 ? 0 : (size - 1) / kTaskFrameGranule;
}

// A cached block: its first bytes link it to the next one of its class.
struct CachedFrame {
  CachedFrame* next;
};

// The calling thread's lists. Trivially destructible, so it stays usable while other
// thread_local objects are destroyed (a frame freed in one of their destructors goes
// straight to the heap: `closed`).
struct FrameLists {
  CachedFrame* head[kClasses];
  uint8_t count[kClasses];
  bool reaper_armed;  // the thread's lists are given back at its exit
  bool closed;
};
extern constinit thread_local FrameLists t_frames;

void* AllocateSlow(std::size_t size);
void FreeSlow(void* frame, std::size_t size) noexcept;

}  // namespace task_frame_internal

// A block of at least `size` bytes (default new alignment); throws std::bad_alloc as
// operator new does (a kernel task's frame failing to allocate terminates).
// The common cases (a cached block to take, room to cache one) are inline: every control
// verb allocates and frees a frame, and the calls were ~40 instructions of each. Under
// AddressSanitizer every call goes out of line (the cached blocks are poisoned there).
inline void* AllocateTaskFrame(std::size_t size) {
#if !defined(__SANITIZE_ADDRESS__)
  using namespace task_frame_internal;
  const std::size_t c = ClassOf(size);
  if (c < kClasses) {
    FrameLists& lists = t_frames;
    if (CachedFrame* block = lists.head[c]) {
      lists.head[c] = block->next;
      --lists.count[c];
      return block;
    }
  }
#endif
  return task_frame_internal::AllocateSlow(size);
}

// Gives back a block of AllocateTaskFrame(size), on any thread.
inline void FreeTaskFrame(void* frame, std::size_t size) noexcept {
#if !defined(__SANITIZE_ADDRESS__)
  using namespace task_frame_internal;
  const std::size_t c = ClassOf(size);
  FrameLists& lists = t_frames;
  if (c < kClasses && lists.reaper_armed && !lists.closed && lists.count[c] < kTaskFrameDepth) {
    auto* block = static_cast<CachedFrame*>(frame);
    block->next = lists.head[c];
    lists.head[c] = block;
    ++lists.count[c];
    return;
  }
#endif
  task_frame_internal::FreeSlow(frame, size);
}

// For tests: the calling thread's cached blocks of the class of `size`, and the blocks the
// pool holds from the heap over all threads (in use or cached; pooled sizes only).
std::size_t TaskFramesCachedForSize(std::size_t size);
int64_t TaskFrameHeapBlocks();

}  // namespace softib::kernel
