// The ConformanceHarness of the verb conformance suite: a booted node (TestNode) and one
// caller per path, each preparing its own objects (ObjectMaker). A user process's file of
// the first CA's device takes the raw IOCTLs and the proxy path; a second such file is the
// "foreign" one; a kernel client's AL instance takes the direct calls and its open file of
// the AL device the IRPs. The second CA is the far end of CM exchanges (FarEnd) and hosts
// the SA that answers the SA client's verbs (SaResponder).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conformance_harness.h"
#include "far_end.h"
#include "object_maker.h"
#include "sa_responder.h"
#include "test_node.h"
#include "verb_env.h"

namespace softib::conformance {

class NodeHarness final : public ConformanceHarness {
 public:
  explicit NodeHarness(std::unique_ptr<TestNode> node);
  ~NodeHarness() override;

  void Reset() override;
  bool Prepare(uint32_t ordinal, std::vector<uint8_t>& input, uint32_t& output_length) override;
  bool PrepareDestroyWithChild(uint32_t ordinal, abi::ObjectType child, std::vector<uint8_t>& input,
                               uint32_t& output_length) override;
  CallResult Ioctl(uint32_t code, std::span<const uint8_t> input, uint32_t output_length) override;
  CallResult Call(CallPath path, uint32_t ordinal, std::span<const uint8_t> input,
                  uint32_t output_length) override;
  uint64_t MakeBadHandle(abi::ObjectType type, BadHandle kind) override;

  // What the last prepared request lacks, or "" (see IncompleteRequest()).
  const std::string& missing() const;
  // Whether an object of `type` can be made now (probed once, on a fresh state).
  bool CanCreate(abi::ObjectType type);

 private:
  struct Side;
  Side& SideOf(CallPath path);
  // The request of the last Prepare (or PrepareDestroyWithChild) made on `side`.
  bool Replay(Side& side, std::vector<uint8_t>& input, uint32_t& output_length);
  static bool PrepareOn(Side& side, const VerbInfo& verb, bool with_child, abi::ObjectType child,
                        std::vector<uint8_t>& input, uint32_t& output_length);
  static void MaskExchangeOutput(const VerbInfo& verb, CallResult& r);

  std::unique_ptr<TestNode> node_;
  std::unique_ptr<SaResponder> sa_;
  std::unique_ptr<FarEnd> far_end_;  // reset with the callers
  std::vector<uint8_t> buffer_;      // what MRs register
  std::unique_ptr<Side> user_, foreign_, direct_, irp_;
  const VerbInfo* last_verb_ = nullptr;
  bool last_with_child_ = false;
  abi::ObjectType last_child_{};
  std::map<abi::ObjectType, bool> creatable_;
};

}  // namespace softib::conformance
