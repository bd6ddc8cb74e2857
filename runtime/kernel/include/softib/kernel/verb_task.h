// A verb handler written as a coroutine (VerbTask): it sends the IRPs of its work to the
// driver below (`co_await SendIrp`, irp_task.h) and reports the verb's outcome with
// `co_return VerbOutcome{status, output_length}`. Its starter — the handler the generated
// dispatch or direct call invoked — learns the result in one of two ways:
//   - every IRP completed inline (the common case): the coroutine has finished before the
//     starter looks, and Start() returns the final status synchronously, as an ordinary
//     handler; the caller completes the verb IRP (nothing else is paid than the frame);
//   - an IRP pended: Start() marks the verb IRP pending and returns PENDING, and the
//     coroutine completes the verb IRP itself (CompleteVerbIrp with its output length) when
//     it finishes, in the last completion routine (a DPC at DISPATCH, typically).
// A direct call without an IRP (irp == nullptr) has nothing to pend: when the coroutine
// suspends, Start() waits for it (PASSIVE only: at DISPATCH the verifier fails the wait —
// a direct call at DISPATCH whose work may pend must bring an IRP).
//
// The dispatch's arguments (in, refs, ctx) live on its stack: a coroutine takes what it
// needs by value (ObjectRef copies), and its output by pointer (the IRP's system buffer, or
// the direct caller's structure, which stays valid until the verb completes).
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <utility>

#include "softib/kernel/event.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/status.h"
#include "softib/kernel/task_frame.h"
#include "softib/kernel/verb_support.h"

namespace softib::kernel {

// What a verb coroutine returns: the status and the output length of the verb IRP.
struct VerbOutcome {
  Status status = Status::SUCCESS;
  uint64_t information = 0;
};

class VerbTask {
 public:
  struct promise_type;
  using Handle = std::coroutine_handle<promise_type>;

  // The starter's side of a suspended task without an IRP: where the result goes.
  struct Waiter {
    KEvent done{EventType::kNotification};
    VerbOutcome outcome;
  };

  struct promise_type {
    // kRunning: the starter has not looked yet. kDone: finished first (the starter reads
    // the outcome and frees the frame). kDetaching/kDetached: the starter saw it suspended
    // and is marking the verb IRP pending / has marked it: the task completes the verb.
    enum State : int { kRunning, kDone, kDetaching, kDetached };

    // The frame from the thread's free list, not the heap (task_frame.h: every AL verb that
    // reaches the HCA driver runs in one of these).
    static void* operator new(std::size_t size) { return AllocateTaskFrame(size); }
    static void operator delete(void* frame, std::size_t size) noexcept {
      FreeTaskFrame(frame, size);
    }
    VerbTask get_return_object() noexcept { return VerbTask(Handle::from_promise(*this)); }
    std::suspend_never initial_suspend() noexcept { return {}; }

    struct FinalAwaiter {
      bool await_ready() const noexcept { return false; }
      // Stays suspended for the starter to read and destroy when it has not looked yet;
      // else hands the verb its outcome after freeing the frame (so the references the task
      // held are gone before anyone sees the verb done).
      bool await_suspend(Handle handle) noexcept {
        promise_type& p = handle.promise();
        if (!p.suspended) {
          // Never suspended: we are still in the starter's call of the coroutine (the ramp),
          // Start() has not run and nobody else knows the task, so a plain store will do
          // (the common case: every IRP completed inline, no locked instruction).
          p.state.store(kDone, std::memory_order_relaxed);
          return true;
        }
        int expected = kRunning;
        if (p.state.compare_exchange_strong(expected, kDone, std::memory_order_acq_rel)) {
          return true;
        }
        // The starter is between its look and the IRP's mark: a few instructions on
        // another CPU (it cannot wait there), so spin rather than complete an unmarked IRP.
        while (p.state.load(std::memory_order_acquire) == kDetaching) {
        }
        Irp* const irp = p.irp;
        Waiter* const waiter = p.waiter;
        const VerbOutcome outcome = p.outcome;
        handle.destroy();
        if (irp != nullptr) {
          CompleteVerbIrp(irp, outcome.status, outcome.information);
        } else {
          waiter->outcome = outcome;
          waiter->done.Set();  // the waiter may return at once: touch nothing after
        }
        return true;
      }
      void await_resume() const noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }

    // Every co_await of the body goes through Tracked, which records whether the task ever
    // really suspended (its awaiter's await_suspend said true): until then it runs in the
    // ramp, on the starter's thread, and FinalAwaiter needs no compare-exchange.
    template <typename Awaiter>
    struct Tracked {
      Awaiter& inner;  // the co_await's operand, alive until the end of its full-expression
      promise_type* promise;
      bool await_ready() { return inner.await_ready(); }
      bool await_suspend(std::coroutine_handle<> handle) {
        static_assert(std::is_same_v<decltype(inner.await_suspend(handle)), bool>,
                      "a VerbTask awaits awaiters whose await_suspend returns bool");
        const bool before = promise->suspended;
        promise->suspended = true;  // before: once suspended, another thread may resume us
        if (inner.await_suspend(handle)) return true;  // touch nothing: we may be gone
        promise->suspended = before;                   // not suspended after all
        return false;
      }
      decltype(auto) await_resume() { return inner.await_resume(); }
    };
    template <typename Awaiter>
    Tracked<std::remove_reference_t<Awaiter>> await_transform(Awaiter&& awaiter) noexcept {
      return {awaiter, this};
    }

    void return_value(VerbOutcome outcome) noexcept { this->outcome = outcome; }
    // Kernel code has no exceptions to give anyone: one escaping a task is a bug.
    void unhandled_exception() noexcept { std::terminate(); }

    std::atomic<int> state{kRunning};
    bool suspended = false;  // Tracked: the body has really suspended at least once
    VerbOutcome outcome;
    Irp* irp = nullptr;
    Waiter* waiter = nullptr;
  };

  VerbTask(VerbTask&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  VerbTask(const VerbTask&) = delete;
  VerbTask& operator=(const VerbTask&) = delete;
  VerbTask& operator=(VerbTask&&) = delete;
  ~VerbTask() {
    if (handle_) std::terminate();  // a task nobody started
  }

  // The handler's return value: the final status when the task finished inline, else
  // PENDING (the task completes `irp`), or, without an IRP, the final status after
  // waiting for the task (PASSIVE).
  [[nodiscard]] Status Start(Irp* irp) && {
    Handle handle = std::exchange(handle_, nullptr);
    promise_type& p = handle.promise();
    if (p.state.load(std::memory_order_acquire) == promise_type::kDone) {
      return Finish(handle);
    }
    Waiter waiter;
    p.irp = irp;
    p.waiter = &waiter;
    int expected = promise_type::kRunning;
    if (!p.state.compare_exchange_strong(expected, promise_type::kDetaching,
                                         std::memory_order_acq_rel)) {
      return Finish(handle);  // finished meanwhile, on the thread that completed its IRP
    }
    if (irp != nullptr) IoMarkIrpPending(irp);
    p.state.store(promise_type::kDetached, std::memory_order_release);
    // The task owns itself from here: `p` may be gone.
    if (irp != nullptr) return Status::PENDING;
    KeWaitForSingleObject(&waiter.done);  // the verifier fails this at DISPATCH
    return waiter.outcome.status;
  }

 private:
  explicit VerbTask(Handle handle) : handle_(handle) {}
  static Status Finish(Handle handle) {
    const Status status = handle.promise().outcome.status;
    handle.destroy();
    return status;
  }

  Handle handle_;
};

}  // namespace softib::kernel
