// The node the generated verb conformance suite (generated/conformance/verbs/) drives.
// Declaration only: NodeHarness (node_harness.h) implements it over a booted node. The suite
// builds every request from bytes, so the harness needs no per-verb code beyond Prepare.
// Test code: it lives with the suite, not in the kernel's headers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "softib/abi/abi_objects.h"
#include "softib/abi/abi_status.h"

namespace softib::conformance {

// How a request reaches the verb.
enum class CallPath : uint8_t {
  kProxy,             // a user-mode file: the generated proxy over DeviceIoControl
  kDirect,            // Ib<Verb>() from a kernel client, synchronous (no IRP)
  kDirectAtDispatch,  // the same, called at DISPATCH level under the verifier
  kIrpSync,           // Call<Verb>Irp(): built IRP, IoCallDriver, wait
  kIrpAsync,          // Send<Verb>Irp(): built IRP, completion routine
};

// Handles that must not resolve.
enum class BadHandle : uint8_t {
  kZero,       // null (accepted only for optional parameters)
  kWrongType,  // a live handle of another object type in the same file
  kStale,      // right index and type, older generation
  kDestroyed,  // the handle of an object that was destroyed
  kForeign,    // a live handle of another file (another process)
  kGarbage,    // bits that no table ever issued
};

struct CallResult {
  abi::Status status{};
  uint32_t information = 0;     // output bytes returned
  std::vector<uint8_t> output;  // the output buffer after the call
  bool verifier_clean = true;   // no IRQL or other verifier violation during the call
};

class ConformanceHarness {
 public:
  virtual ~ConformanceHarness() = default;

  // The harness of this test binary.
  static ConformanceHarness& Instance();

  // Tears down what earlier cases created and starts from a fresh node state.
  virtual void Reset() = 0;

  // A valid request for the verb with this ordinal: creates the objects its handles name
  // and fills `input` (the fixed structure, then any trailing array) so that it passes
  // every dispatch check; sets the output length to use. False when it cannot (a failure).
  virtual bool Prepare(uint32_t ordinal, std::vector<uint8_t>& input, uint32_t& output_length) = 0;

  // Like Prepare for the destroying verb `ordinal`, with an object of type `child` (a child
  // of the object to destroy, or an object that uses it) still alive.
  virtual bool PrepareDestroyWithChild(uint32_t ordinal, abi::ObjectType child,
                                       std::vector<uint8_t>& input, uint32_t& output_length) = 0;

  // Sends raw bytes as IOCTL `code` from a user-mode file (METHOD_BUFFERED), any lengths.
  virtual CallResult Ioctl(uint32_t code, std::span<const uint8_t> input,
                           uint32_t output_length) = 0;

  // Calls the verb through `path` with a prepared input.
  virtual CallResult Call(CallPath path, uint32_t ordinal, std::span<const uint8_t> input,
                          uint32_t output_length) = 0;

  // A handle of type `type` with the requested defect, for the file Ioctl() uses.
  virtual uint64_t MakeBadHandle(abi::ObjectType type, BadHandle kind) = 0;
};

}  // namespace softib::conformance
