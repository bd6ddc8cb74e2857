// A memfd region with rings laid out and formatted as the HCA would, for the ring tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "softib/rings/ring.h"
#include "softib/rings/shared_memory.h"

namespace softib::rings::testing {

struct TestRing {
  RingMapping mapping{};
  RingKind kind = RingKind::SEND;
};

// Creates one object holding `rings` (mappings filled in), formatted.
inline SharedMemory MakeRegion(std::initializer_list<TestRing*> rings) {
  RegionLayout layout;
  for (TestRing* ring : rings) {
    EXPECT_TRUE(layout.Add(ring->kind, ring->mapping.num_entries, &ring->mapping));
  }
  SharedMemory shm;
  std::string error;
  EXPECT_TRUE(
      SharedMemory::Create("softib-ring-test", static_cast<size_t>(layout.size()), &shm, &error))
      << error;
  for (TestRing* ring : rings) FormatRing(shm.base(), ring->mapping, ring->kind);
  return shm;
}

inline TestRing Ring(RingKind kind, uint32_t num_entries) {
  TestRing ring;
  ring.kind = kind;
  ring.mapping.num_entries = num_entries;
  return ring;
}

}  // namespace softib::rings::testing
