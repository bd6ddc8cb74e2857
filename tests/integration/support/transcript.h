// The transcript a test client prints: one "ok"/"FAILED" line per check, flushed at once
// (the test reads it through a pipe), and the count of failed checks for the exit code.
#pragma once

#include <cstdio>
#include <string>

#include "softib/abi/types.h"

namespace softib::integration {

inline int& TranscriptFailures() {
  static int failures = 0;
  return failures;
}

inline bool Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok    " : "FAILED", what.c_str());
  std::fflush(stdout);
  if (!ok) ++TranscriptFailures();
  return ok;
}

inline bool Expect(abi::Status s, const std::string& what,
                   abi::Status expected = abi::Status::SUCCESS) {
  return Check(s == expected, what + ": " + abi::ToString(s));
}

// The last line, and the exit code: 0 only when every check passed.
inline int FinishTranscript() {
  std::printf("%d failed\n", TranscriptFailures());
  return TranscriptFailures() == 0 ? 0 : 1;
}

}  // namespace softib::integration
