// The AL's own commands to the HCA driver (issue 17): the generated CI IRPs (kernel/hca/
// ci_irp.h) sent to the CA's device from IrpTask coroutines. `co_await CiCall(ca, irp, &out,
// sizeof out)` sends an IRP a Build<CiVerb>Irp made, resumes in its completion (inline when
// the HCA completed at once, else in its completion routine: a DPC at DISPATCH), copies the
// output to `out` and frees the IRP. Code after a co_await is DISPATCH-safe: spin locks, no
// FastMutex, no waits.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <utility>

#include "kernel/hca/ci_irp.h"
#include "softib/kernel/irp_task.h"

namespace softib::al {

class CiCall {
 public:
  // `irp` from a Build<CiVerb>Irp (null: the builder had no memory, INSUFFICIENT_RESOURCES).
  CiCall(kernel::DeviceObject* device, kernel::Irp* irp, void* out = nullptr,
         std::size_t out_length = 0)
      : irp_(irp), out_(out), out_length_(out_length), send_(device, irp) {}

  bool await_ready() const noexcept { return irp_ == nullptr; }
  bool await_suspend(std::coroutine_handle<> handle) noexcept {
    return send_.await_suspend(handle);
  }
  kernel::Status await_resume() const noexcept {
    if (irp_ == nullptr) return kernel::Status::INSUFFICIENT_RESOURCES;
    const kernel::Status status = send_.await_resume();
    if (out_ != nullptr && irp_->AssociatedIrp.SystemBuffer != nullptr) {
      std::memcpy(out_, irp_->AssociatedIrp.SystemBuffer,
                  std::min<std::size_t>(out_length_, irp_->IoStatus.Information));
    }
    kernel::IoFreeIrp(irp_);
    return status;
  }

 private:
  kernel::Irp* const irp_;
  void* const out_;
  const std::size_t out_length_;
  kernel::SendIrp send_;
};

// `co_await AwaitDone(start)`: calls start(resume) and resumes the coroutine once `resume`
// was called (inline, or later from any thread or DPC), exactly once, as SendIrp does for
// an IRP: the way a coroutine waits for an asynchronous AL operation that reports by
// callback (a cache refresh, a special QP's setup chain).
class AwaitDone {
 public:
  explicit AwaitDone(std::function<void(std::function<void()>)> start) : start_(std::move(start)) {}
  AwaitDone(const AwaitDone&) = delete;
  AwaitDone& operator=(const AwaitDone&) = delete;

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> handle) {
    handle_ = handle;
    start_([this] {
      int expected = kStarted;
      if (!phase_.compare_exchange_strong(expected, kDone, std::memory_order_acq_rel)) {
        handle_.resume();  // suspended on us: continue here (touch nothing after)
      }
    });
    int expected = kStarted;
    return phase_.compare_exchange_strong(expected, kSuspended, std::memory_order_acq_rel);
  }
  void await_resume() const noexcept {}

 private:
  static constexpr int kStarted = 0, kDone = 1, kSuspended = 2;
  std::function<void(std::function<void()>)> start_;
  std::coroutine_handle<> handle_;
  std::atomic<int> phase_{kStarted};
};

}  // namespace softib::al
