// A -- S0 == S1 -- B: two software HCAs (LIDs 1 and 2) joined through two switches by
// three cables, an RC QP pair connected across them, and a run of SENDs checked for
// exactly-once, in-order delivery of every byte. Shared by the test and the soak bench.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric_fixture.h"

namespace softib::fabric::testing {

struct RcEndpoint {
  uint32_t pd = 0, cq = 0, qpn = 0, key = 0;
  std::vector<uint8_t> buffer;
  uint64_t addr(uint64_t offset = 0) const {
    return reinterpret_cast<uint64_t>(buffer.data()) + offset;
  }
};

struct RcRunResult {
  uint32_t sends_completed = 0;    // in order, SUCCESS
  uint32_t messages_received = 0;  // in order, right length and bytes
  std::string error;               // the first thing that went wrong, or ""
  uint64_t lost = 0, carried = 0, duplicated = 0, reordered = 0;  // over all cables
};

class RcOverSwitches {
 public:
  static constexpr uint16_t kLidA = 1, kLidB = 2;
  explicit RcOverSwitches(uint32_t seed);

  void SetFaultsEverywhere(const LinkFaults& faults);
  // Delivers, and advances the fake clock by 1 ms (the HCAs' timers run) when idle.
  void Step();
  // `messages` SENDs of 1..3000 bytes (MTU 1024: one to three packets), `window` in flight.
  RcRunResult RunSends(uint32_t messages, uint32_t window = 64);

  Fabric fabric;
  std::unique_ptr<Host> a, b;
  RcEndpoint ea, eb;
  uint32_t cables[3] = {};

 private:
  uint64_t now_ = 0;
};

}  // namespace softib::fabric::testing
