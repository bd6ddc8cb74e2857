// The verifier's failure path: message, stack, abort. No recovery: a broken kernel rule
// means the state can no longer be trusted.
#include "softib/kernel/verifier.h"

#include <execinfo.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace softib::kernel {

void VerifierFail(const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  std::fprintf(stderr, "softib verifier: %s\nstack:\n", message);
  std::fflush(stderr);
  void* frames[64];
  const int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  std::abort();
}

}  // namespace softib::kernel
