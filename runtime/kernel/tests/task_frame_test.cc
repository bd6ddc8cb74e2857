// Task frames (task_frame.h): a freed frame is reused by its thread for a frame of the same
// size class, whichever thread allocated it; a thread keeps a bounded number per class and
// gives them back to the heap when it exits (the pool's heap block count comes back to
// where it was); large frames bypass the pool; IrpTask and VerbTask frames come from it.
#include "softib/kernel/task_frame.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "softib/kernel/irp_task.h"
#include "softib/kernel/verb_task.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace softib::kernel {
namespace {

// Runs `body` on a thread of its own (empty lists at start, reaped at exit) and joins it.
template <typename F>
void OnFreshThread(F body) {
  std::thread thread(body);
  thread.join();
}

TEST(TaskFrameTest, AFreedFrameIsReusedForTheSameSizeClass) {
  OnFreshThread([] {
    const int64_t heap = TaskFrameHeapBlocks();
    void* first = AllocateTaskFrame(200);
    EXPECT_EQ(TaskFrameHeapBlocks(), heap + 1);
    FreeTaskFrame(first, 200);
    EXPECT_EQ(TaskFramesCachedForSize(200), 1u);
#if defined(__SANITIZE_ADDRESS__)
    EXPECT_TRUE(__asan_address_is_poisoned(first));  // a use after free is still caught
#endif
    // 250 bytes round to the same 256-byte class as 200: the same block, no heap.
    void* second = AllocateTaskFrame(250);
    EXPECT_EQ(second, first);
    EXPECT_EQ(TaskFramesCachedForSize(200), 0u);
    EXPECT_EQ(TaskFrameHeapBlocks(), heap + 1);
    FreeTaskFrame(second, 250);
  });
}

TEST(TaskFrameTest, ClassesDoNotShareBlocks) {
  OnFreshThread([] {
    void* small = AllocateTaskFrame(100);
    FreeTaskFrame(small, 100);
    void* large = AllocateTaskFrame(600);
    EXPECT_NE(large, small);
    EXPECT_EQ(TaskFramesCachedForSize(100), 1u);
    EXPECT_EQ(TaskFramesCachedForSize(600), 0u);
    FreeTaskFrame(large, 600);
    EXPECT_EQ(TaskFramesCachedForSize(600), 1u);
  });
}

TEST(TaskFrameTest, AFrameFreedOnAnotherThreadJoinsThatThreadsList) {
  const int64_t heap = TaskFrameHeapBlocks();
  void* frame = nullptr;
  OnFreshThread([&] { frame = AllocateTaskFrame(300); });
  EXPECT_EQ(TaskFrameHeapBlocks(), heap + 1);  // in use: the allocating thread is gone
  OnFreshThread([&] {
    FreeTaskFrame(frame, 300);  // as a DPC finishing a task started elsewhere
    EXPECT_EQ(TaskFramesCachedForSize(300), 1u);
    void* again = AllocateTaskFrame(300);
    EXPECT_EQ(again, frame);
    FreeTaskFrame(again, 300);
  });
  EXPECT_EQ(TaskFrameHeapBlocks(), heap);  // the freeing thread's exit gave it back
}

TEST(TaskFrameTest, AThreadKeepsABoundedNumberAndGivesThemBackAtExit) {
  const int64_t heap = TaskFrameHeapBlocks();
  OnFreshThread([&] {
    std::vector<void*> frames;
    for (std::size_t i = 0; i < 2 * kTaskFrameDepth; ++i) frames.push_back(AllocateTaskFrame(64));
    EXPECT_EQ(TaskFrameHeapBlocks(), heap + static_cast<int64_t>(2 * kTaskFrameDepth));
    for (void* frame : frames) FreeTaskFrame(frame, 64);
    EXPECT_EQ(TaskFramesCachedForSize(64), kTaskFrameDepth);
    EXPECT_EQ(TaskFrameHeapBlocks(), heap + static_cast<int64_t>(kTaskFrameDepth));
  });
  EXPECT_EQ(TaskFrameHeapBlocks(), heap);
}

TEST(TaskFrameTest, LargeFramesBypassThePool) {
  OnFreshThread([] {
    const int64_t heap = TaskFrameHeapBlocks();
    constexpr std::size_t kLarge = kTaskFrameMaxPooled + 1;
    void* frame = AllocateTaskFrame(kLarge);
    ASSERT_NE(frame, nullptr);
    EXPECT_EQ(TaskFrameHeapBlocks(), heap);
    FreeTaskFrame(frame, kLarge);
    EXPECT_EQ(TaskFramesCachedForSize(kLarge), 0u);
    EXPECT_EQ(TaskFrameHeapBlocks(), heap);
  });
}

VerbTask AnswerSeven() { co_return VerbOutcome{Status::SUCCESS, 7}; }
IrpTask CountOne(int* counter) {
  ++*counter;
  co_return;
}

TEST(TaskFrameTest, TaskFramesComeFromThePoolAndAreReused) {
  OnFreshThread([] {
    EXPECT_EQ(AnswerSeven().Start(nullptr), Status::SUCCESS);
    int counter = 0;
    CountOne(&counter);
    const int64_t heap = TaskFrameHeapBlocks();  // both frames cached now
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(AnswerSeven().Start(nullptr), Status::SUCCESS);
      CountOne(&counter);
    }
    EXPECT_EQ(counter, 11);
    EXPECT_EQ(TaskFrameHeapBlocks(), heap);  // no heap block taken after the first of each
  });
}

}  // namespace
}  // namespace softib::kernel
