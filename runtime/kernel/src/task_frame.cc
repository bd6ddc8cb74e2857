// The per-thread free lists of task frames (task_frame.h says why).
#include "softib/kernel/task_frame.h"

#include <atomic>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SOFTIB_POISON_FRAME(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define SOFTIB_UNPOISON_FRAME(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SOFTIB_POISON_FRAME(p, n) ((void)(p), (void)(n))
#define SOFTIB_UNPOISON_FRAME(p, n) ((void)(p), (void)(n))
#endif

namespace softib::kernel {
namespace task_frame_internal {
constinit thread_local FrameLists t_frames{};
}  // namespace task_frame_internal

namespace {

using task_frame_internal::CachedFrame;
using task_frame_internal::ClassOf;
using task_frame_internal::FrameLists;
using task_frame_internal::t_frames;
constexpr std::size_t kFrameClasses = task_frame_internal::kClasses;

// Blocks of the pooled classes taken from the heap and not given back (all threads).
std::atomic<int64_t> g_heap_blocks{0};

std::size_t ClassBytes(std::size_t c) { return (c + 1) * kTaskFrameGranule; }

void HeapFree(void* block) {
  ::operator delete(block);  // unsized: clang does not declare sized delete by default
  g_heap_blocks.fetch_sub(1, std::memory_order_relaxed);
}

// Gives the thread's cached blocks back to the heap when the thread exits.
struct FrameReaper {
  ~FrameReaper() {
    FrameLists& lists = t_frames;
    lists.closed = true;
    for (std::size_t c = 0; c < kFrameClasses; ++c) {
      while (CachedFrame* block = lists.head[c]) {
        SOFTIB_UNPOISON_FRAME(block, ClassBytes(c));
        lists.head[c] = block->next;
        HeapFree(block);
      }
      lists.count[c] = 0;
    }
  }
  void Arm() {}
};
thread_local FrameReaper t_reaper;

}  // namespace

void* task_frame_internal::AllocateSlow(std::size_t size) {
  const std::size_t c = ClassOf(size);
  if (c >= kFrameClasses) return ::operator new(size);
  FrameLists& lists = t_frames;
  if (CachedFrame* block = lists.head[c]) {
    SOFTIB_UNPOISON_FRAME(block, ClassBytes(c));
    lists.head[c] = block->next;
    --lists.count[c];
    return block;
  }
  void* block = ::operator new(ClassBytes(c));
  g_heap_blocks.fetch_add(1, std::memory_order_relaxed);
  return block;
}

void task_frame_internal::FreeSlow(void* frame, std::size_t size) noexcept {
  const std::size_t c = ClassOf(size);
  if (c >= kFrameClasses) {
    ::operator delete(frame);
    return;
  }
  FrameLists& lists = t_frames;
  if (lists.closed || lists.count[c] >= kTaskFrameDepth) {
    HeapFree(frame);
    return;
  }
  if (!lists.reaper_armed) {  // the first block this thread keeps: free it at thread exit
    lists.reaper_armed = true;
    t_reaper.Arm();
  }
  auto* block = static_cast<CachedFrame*>(frame);
  block->next = lists.head[c];
  lists.head[c] = block;
  ++lists.count[c];
  SOFTIB_POISON_FRAME(block, ClassBytes(c));
}

std::size_t TaskFramesCachedForSize(std::size_t size) {
  const std::size_t c = ClassOf(size);
  return c < kFrameClasses ? t_frames.count[c] : 0;
}

int64_t TaskFrameHeapBlocks() { return g_heap_blocks.load(std::memory_order_relaxed); }

}  // namespace softib::kernel
