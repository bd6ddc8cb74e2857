// The AL's commands to the HCA driver's command interface (issue 17): each is an IRP
// (idl/ci.idl, the generated builders of kernel/hca/ci_irp.h) sent to the CA's device below
// the AL's filter, awaited in a coroutine (kernel::VerbTask for a verb handler,
// kernel::IrpTask otherwise) through CiIrp: nothing in the AL waits for the HCA, and the
// code after a co_await may run in a DPC at DISPATCH (no FastMutex, no waits there).
#pragma once

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <cstring>
#include <functional>
#include <utility>

#include "kernel/hca/ci_irp.h"
#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/objects.h"
#include "softib/abi/ci.h"
#include "softib/kernel/irp_task.h"
#include "softib/kernel/verb_support.h"
#include "softib/kernel/verb_task.h"

namespace softib::al {

inline CiRequestor RequestorOf(const Instance* instance) {
  if (instance == nullptr) return {};
  return {instance->file, instance->pid != 0 ? kernel::ProcessorMode::kUserMode
                                             : kernel::ProcessorMode::kKernelMode};
}

// A CI IRP of a coroutine, the one way the AL sends one. Two forms:
//   - one-shot: `co_await CiIrp(device, Build<Verb>Irp(...), &out, sizeof out)` sends it,
//     copies the driver's output (up to its length) to `out` and frees the IRP as the
//     coroutine resumes;
//   - kept: `CiIrp ci(ca, Build<Verb>Irp(...)); co_await ci.Send();` then reads the output
//     from the system buffer (Output<T>, Buffer, Information); the IRP goes with `ci`.
// A null IRP (the builder had no memory) sends nothing and answers INSUFFICIENT_RESOURCES.
// The code after the co_await runs in the IRP's completion: inline when the HCA completed
// at once, else in its completion routine (a DPC at DISPATCH: no FastMutex, no waits).
// (The one-shot form is a temporary of the co_await expression, which gcc 12 may destroy
// twice: its destructor finds the IRP already freed and does nothing.)
class CiIrp {
 public:
  CiIrp(kernel::DeviceObject* device, kernel::Irp* irp, void* out = nullptr,
        std::size_t out_length = 0)
      : irp_(irp), out_(out), out_length_(out_length), keep_(false), send_(device, irp) {}
  CiIrp(AlCa* ca, kernel::Irp* irp)
      : irp_(irp), out_(nullptr), out_length_(0), keep_(true), send_(ca->lower, irp) {}
  ~CiIrp() {
    if (irp_ != nullptr) kernel::IoFreeIrp(std::exchange(irp_, nullptr));
  }
  CiIrp(const CiIrp&) = delete;
  CiIrp& operator=(const CiIrp&) = delete;

  bool built() const { return irp_ != nullptr; }
  // `co_await ci.Send()`: the kept form (an awaiter that only points at `ci`).
  struct Sending {
    CiIrp* ci;
    bool await_ready() const noexcept { return ci->await_ready(); }
    bool await_suspend(std::coroutine_handle<> handle) noexcept {
      return ci->await_suspend(handle);
    }
    kernel::Status await_resume() noexcept { return ci->await_resume(); }
  };
  Sending Send() { return {this}; }

  bool await_ready() const noexcept { return irp_ == nullptr; }
  bool await_suspend(std::coroutine_handle<> handle) noexcept {
    return send_.await_suspend(handle);
  }
  kernel::Status await_resume() noexcept {
    if (irp_ == nullptr) return kernel::Status::INSUFFICIENT_RESOURCES;
    const kernel::Status status = send_.await_resume();
    if (out_ != nullptr && irp_->AssociatedIrp.SystemBuffer != nullptr) {
      std::memcpy(out_, irp_->AssociatedIrp.SystemBuffer,
                  std::min<std::size_t>(out_length_, irp_->IoStatus.Information));
    }
    if (!keep_) kernel::IoFreeIrp(std::exchange(irp_, nullptr));
    return status;
  }

  // The kept form, after the co_await: the driver's output (null when it returned less:
  // every failure returns none).
  template <typename T>
  const T* Output() const {
    return kernel::IrpOutput<T>(irp_);
  }
  const void* Buffer() const { return irp_->AssociatedIrp.SystemBuffer; }
  uint64_t Information() const { return irp_->IoStatus.Information; }

 private:
  kernel::Irp* irp_;
  void* const out_;
  const std::size_t out_length_;
  const bool keep_;
  kernel::SendIrp send_;
};

// `co_await AwaitDone(start)`: calls start(resume) and resumes the coroutine once `resume`
// was called (inline, or later from any thread or DPC), exactly once, as SendIrp does for
// an IRP: the way a coroutine waits for an asynchronous AL operation that reports by
// callback (a cache refresh, a special QP's setup chain, an object's release). What `start`
// captures must be trivially destructible (pointers): gcc 12 may destroy the temporary
// twice.
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
