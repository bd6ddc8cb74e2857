// Kernel code that continues in IRP completion routines, written top to bottom: a C++20
// coroutine (IrpTask) that `co_await`s the IRPs it sends (SendIrp). This is the seeds'
// IRP-based verbs without callback soup: a driver that must issue several verbs to the
// driver below (the AL to the HCA driver) sends one, and its code after the co_await runs
// in that IRP's completion routine — inline when the lower driver completed at once, else
// later on whatever thread completes it (a DPC at DISPATCH, typically). Nothing waits, so
// the code may be started at DISPATCH, and it must stay DISPATCH-safe after every co_await.
//
//   IrpTask Example(DeviceObject* lower) {
//     Irp* irp = IoBuildDeviceIoControlRequest(code, lower, &in, sizeof in, &out, sizeof out,
//     true); const Status s = co_await SendIrp(lower, irp);  // the IRP is ours again here
//     ...read irp->AssociatedIrp.SystemBuffer, then IoFreeIrp(irp)
//   }
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>

#include "softib/kernel/io.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/status.h"
#include "softib/kernel/task_frame.h"

namespace softib::kernel {

// A fire-and-forget coroutine: it starts running at once in its caller (until its first
// co_await of an IRP that pends), and its frame frees itself when it returns. Whoever
// starts one hands it everything it needs by value (references die with the caller).
class IrpTask {
 public:
  struct promise_type {
    // The frame from the thread's free list, not the heap (task_frame.h: the AL starts one
    // of these per CI call).
    static void* operator new(std::size_t size) { return AllocateTaskFrame(size); }
    static void operator delete(void* frame, std::size_t size) noexcept {
      FreeTaskFrame(frame, size);
    }
    IrpTask get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // Kernel code has no exceptions to give anyone: one escaping a task is a bug.
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

// `co_await SendIrp(device, irp)`: sends `irp` (its next stack location set up by the
// builder) to `device` with a completion routine that claims it back, and resumes with
// the IRP's final IoStatus.Status once the driver below completed it. The IRP belongs to
// the coroutine before and after: it frees it (IoFreeIrp) or reuses it. Output of an IRP
// from IoBuildDeviceIoControlRequest stays in its system buffer (claiming the IRP back
// stops the I/O manager's copy to UserBuffer).
class SendIrp {
 public:
  SendIrp(DeviceObject* device, Irp* irp) : device_(device), irp_(irp) {}
  SendIrp(const SendIrp&) = delete;
  SendIrp& operator=(const SendIrp&) = delete;

  bool await_ready() const noexcept { return false; }

  // True: suspended, the completion routine resumes us. False: the IRP was already
  // complete when IoCallDriver returned (inline, or raced on another thread): go on here.
  //
  // The common case, a driver that completes at once, costs no locked instruction: while
  // this thread is inside our IoCallDriver, t_sending_ names us, and a completion routine
  // that finds itself there runs inline, before we could have suspended (nobody races it),
  // so a plain store says "completed" and the load after IoCallDriver sees it. A completion
  // anywhere else (another thread, or this one inside a nested send) races our suspension
  // and settles it with the compare-exchanges, as before.
  bool await_suspend(std::coroutine_handle<> handle) noexcept {
    handle_ = handle;
    IoSetCompletionRoutine(irp_, &OnComplete, this, true, true, true);
    SendIrp* const outer = t_sending_;
    t_sending_ = this;
    IoCallDriver(device_, irp_);
    t_sending_ = outer;
    // Not suspended yet: this awaiter is still alive whoever completed the IRP.
    if (phase_.load(std::memory_order_acquire) == Phase::kCompleted) return false;
    Phase expected = Phase::kSent;
    return phase_.compare_exchange_strong(expected, Phase::kSuspended, std::memory_order_acq_rel);
  }

  Status await_resume() const noexcept { return irp_->IoStatus.Status; }

 private:
  enum class Phase : int { kSent, kCompleted, kSuspended };

  static CompletionAction OnComplete(DeviceObject*, Irp*, void* context) {
    auto* self = static_cast<SendIrp*>(context);
    if (t_sending_ == self) {  // inline, inside our own IoCallDriver on this thread
      self->phase_.store(Phase::kCompleted, std::memory_order_relaxed);
      return CompletionAction::kMoreProcessingRequired;
    }
    Phase expected = Phase::kSent;
    if (!self->phase_.compare_exchange_strong(expected, Phase::kCompleted,
                                              std::memory_order_acq_rel)) {
      // The coroutine is suspended on us: continue it here. It may free the IRP and its
      // own frame (this awaiter with it): touch nothing after resume().
      self->handle_.resume();
    }
    return CompletionAction::kMoreProcessingRequired;
  }

  // The awaiter whose IoCallDriver this thread is in (the innermost), or null.
  static constinit inline thread_local SendIrp* t_sending_ = nullptr;

  DeviceObject* const device_;
  Irp* const irp_;
  std::coroutine_handle<> handle_;
  std::atomic<Phase> phase_{Phase::kSent};
};

}  // namespace softib::kernel
