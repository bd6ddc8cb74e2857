// Interrupt request levels, per thread, as the Windows kernel has them. Implemented by
// runtime/kernel; the verifier turns a violation into an immediate failure.
#pragma once

#include <cstdint>

namespace softib::kernel {

enum class Irql : uint8_t {
  kPassive = 0,  // threads, work items: may block
  kApc = 1,
  kDispatch = 2,  // DPCs, spin lock holders: must not block
};

// The calling thread's current IRQL.
Irql CurrentIrql();

// Raises the calling thread's IRQL to `level` (>= current) and returns the previous one.
Irql RaiseIrql(Irql level);

// Restores an IRQL returned by RaiseIrql.
void LowerIrql(Irql previous);

// Verifier check: fails the process (with a stack trace) when the calling thread runs above
// `highest`. `what` names the routine in the report. Generated direct calls use it.
void VerifyIrqlAtMost(Irql highest, const char* what);

// Verifier check of every routine that can block (waits, sleeps, "paged" allocation,
// synchronous I/O): the caller must run below DISPATCH.
void VerifyBlockingAllowed(const char* what);

// "PASSIVE_LEVEL", "APC_LEVEL", "DISPATCH_LEVEL".
const char* IrqlName(Irql irql);

// Raises to `level` for the scope (tests and code that runs a block at DISPATCH).
class ScopedIrql {
 public:
  explicit ScopedIrql(Irql level) : previous_(RaiseIrql(level)) {}
  ~ScopedIrql() { LowerIrql(previous_); }
  ScopedIrql(const ScopedIrql&) = delete;
  ScopedIrql& operator=(const ScopedIrql&) = delete;

 private:
  Irql previous_;
};

}  // namespace softib::kernel
