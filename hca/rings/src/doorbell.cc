#include "softib/rings/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace softib::rings {

void FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns) {
  struct timespec ts {};
  struct timespec* timeout = nullptr;
  if (timeout_ns >= 0) {
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
    timeout = &ts;
  }
  // Relative timeout with FUTEX_WAIT; EAGAIN (value changed), EINTR and ETIMEDOUT all just
  // return: callers re-check the ring.
  syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout, nullptr, 0);
}

void FutexWakeAll(uint32_t* word) {
  syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool FutexWaitAny(std::span<abi::RingControl* const> controls, std::span<const uint32_t> observed,
                  int64_t timeout_ns) {
#if defined(SYS_futex_waitv) && defined(FUTEX_32)
  struct futex_waitv waiters[128];
  std::memset(waiters, 0, sizeof(waiters));
  for (std::size_t i = 0; i < controls.size(); ++i) {
    waiters[i].val = observed[i];
    waiters[i].uaddr = reinterpret_cast<uintptr_t>(&controls[i]->doorbell.wake_seq);
    waiters[i].flags = FUTEX_32;  // shared: no FUTEX_PRIVATE_FLAG
  }
  struct timespec deadline {};
  struct timespec* timeout = nullptr;
  if (timeout_ns >= 0) {
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    int64_t ns = deadline.tv_nsec + timeout_ns % 1000000000;
    deadline.tv_sec += static_cast<time_t>(timeout_ns / 1000000000 + ns / 1000000000);
    deadline.tv_nsec = static_cast<long>(ns % 1000000000);
    timeout = &deadline;
  }
  long r = syscall(SYS_futex_waitv, waiters, controls.size(), 0, timeout, CLOCK_MONOTONIC);
  if (r >= 0 || errno != ENOSYS) return true;
#endif
  // No futex_waitv: sleep on the first ring in short slices so the others are not starved.
  constexpr int64_t kSlice = 1000000;
  FutexWait(&controls[0]->doorbell.wake_seq, observed[0],
            timeout_ns < 0 || timeout_ns > kSlice ? kSlice : timeout_ns);
  return true;
}

}  // namespace softib::rings
