// Helpers for the generated MAD/header round-trip tests
// (generated/conformance/mad/*_roundtrip.cc): the generated code only lists
// fields; the checks live here, compiled once.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "softib/codec/engine.h"
#include "softib/codec/format_desc.h"

namespace softib::codec::testing {

inline constexpr int kIterations = 200;    // random values per layout
inline constexpr int kFlipIterations = 4;  // random backgrounds for the view test
inline constexpr int kValidIterations = 16;

// A stable per-layout seed, so a failure reproduces.
uint64_t Seed(std::string_view layout);

constexpr uint64_t Mask(uint32_t width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

template <typename T>
T RandomBits(std::mt19937_64& rng, uint32_t width) {
  return static_cast<T>(rng() & Mask(width));
}

void FillRandom(std::mt19937_64& rng, std::span<uint8_t> bytes);

template <typename T, std::size_t N>
std::array<uint8_t, N> Inverted(std::span<T, N> bytes) {
  std::array<uint8_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = static_cast<uint8_t>(~bytes[i]);
  return out;
}

// values[k] is element `index` (-1: a scalar) of `name` and holds `expected`.
bool ExpectElement(const std::vector<FieldValue>& values, std::size_t k, std::string_view name,
                   int index, uint64_t expected);
bool ExpectElementBytes(const std::vector<FieldValue>& values, std::size_t k, std::string_view name,
                        int index, std::span<const uint8_t> expected);
// `got` (read through a view) equals the bits at `offset` of `bytes`.
bool ExpectGetter(uint64_t got, std::span<const uint8_t> bytes, uint32_t offset, uint32_t width,
                  std::string_view name, int index = -1);
// `got` (a view's byte span) is the bytes at bit `offset` of `bytes`.
bool ExpectBytesAt(std::span<const uint8_t> got, std::span<const uint8_t> bytes, uint32_t offset,
                   std::string_view name, int index = -1);
// `after` is `before` with exactly the bits [offset, offset + width) inverted.
bool ExpectFlipped(std::span<const uint8_t> before, std::span<const uint8_t> after, uint32_t offset,
                   uint32_t width, std::string_view name, int index = -1);

// Records a failure saying `what` when `ok` is false. The generated tests use
// these instead of EXPECT_* macros, which would be expanded once per layout.
bool Check(bool ok, std::string_view layout, std::string_view what, int iteration = -1);
// Validate() of a valid value reported nothing.
bool ExpectNoProblems(const std::vector<Problem>& problems, std::string_view layout);
// Validate() reported `field`.
bool ExpectProblem(const std::vector<Problem>& problems, std::string_view layout,
                   std::string_view field, std::string_view why);

bool HasProblem(const std::vector<Problem>& problems, std::string_view field);
std::string Describe(const std::vector<Problem>& problems);

// Bits covered by some field element (1) or by none (0).
std::vector<uint8_t> CoveredMask(const FormatDesc& desc);
// `packed` equals `raw` on covered bits and is zero elsewhere.
bool ExpectRepacked(const FormatDesc& desc, std::span<const uint8_t> raw,
                    std::span<const uint8_t> packed);

// Engine-level checks every layout gets:
// the registries find it, its fields lie inside it and do not overlap.
void CheckDescriptor(const FormatDesc& desc, std::string_view name, std::size_t size);
// FormatFieldValue text parses back through SetField to the same value, and
// PrintFields lays out one "Name:....value" line per shown element.
void CheckTextRoundTrip(const FormatDesc& desc, uint64_t seed);
// DecodeFields/SetField/ValidateBytes refuse a buffer one byte short.
void CheckShortBuffers(const FormatDesc& desc);

}  // namespace softib::codec::testing
