// The driver verifier: a broken kernel rule stops the process at once, naming the rule and
// printing the stack, so that the test that broke it fails where it broke it.
#pragma once

namespace softib::kernel {

// Prints "softib verifier: <message>" and a stack trace to stderr, then aborts.
[[noreturn]] void VerifierFail(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace softib::kernel
