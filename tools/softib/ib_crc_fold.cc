// Reflected CRCs by carry-less multiplication, after Intel's "Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction" (Gopal et al., 2009): the message is
// cut into 128-bit blocks and each block is folded forward onto a later one by multiplying
// its two 64-bit halves with x^D mod P (D the distance folded), which keeps the value the
// same modulo P. Four blocks fold in parallel (512 bits per step), then into one; the last
// 128 bits and the tail bytes finish through the slicing tables instead of a Barrett
// reduction, so one code path serves every polynomial of up to 32 bits (ICRC and VCRC).
//
// Bit order: a reflected CRC feeds each byte least significant bit first, so in a
// little-endian 128-bit load bit i is the coefficient of x^(127-i) of the block. For a
// 64-bit half (bit j <-> x^(63-j)) times a constant C, PCLMULQDQ's result bit i is the
// coefficient of x^(126-i) of the product; the block layout wants x^(127-i), so the
// constant is stored as x * (x^(D-1) mod P), bit-reversed into 64 bits: still congruent
// to x^D, and of degree <= 32, so a product never exceeds 96 bits.
#include "ib_crc_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace softib::ibcrc::detail {

#if defined(__x86_64__)
namespace {

// x^n mod P in normal order (bit d <-> x^d); `poly` without its x^width term.
constexpr uint64_t XPowerModPoly(unsigned n, uint64_t poly, unsigned width) {
  const uint64_t top = uint64_t{1} << width;
  uint64_t r = 1;
  for (unsigned i = 0; i < n; ++i) {
    r <<= 1;
    if (r & top) r ^= top | poly;
  }
  return r;
}

constexpr uint64_t Reverse64(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i)
    if ((v >> i) & 1) r |= uint64_t{1} << (63 - i);
  return r;
}

// The constant that folds a 64-bit half `distance` bits forward (see the header comment).
constexpr uint64_t FoldConstant(unsigned distance, uint64_t poly, unsigned width) {
  return Reverse64(XPowerModPoly(distance - 1, poly, width));
}

// A block's first (lower-addressed) half sits 64 bits further from the target than its
// second half.
struct FoldPair {
  uint64_t first_half, second_half;
};
struct FoldConstants {
  FoldPair by_four;  // 512 bits: onto the block four ahead
  FoldPair by_one;   // 128 bits: onto the next block
};

constexpr FoldConstants MakeFoldConstants(uint64_t poly, unsigned width) {
  return {{FoldConstant(512 + 64, poly, width), FoldConstant(512, poly, width)},
          {FoldConstant(128 + 64, poly, width), FoldConstant(128, poly, width)}};
}

constexpr FoldConstants kCrc32Fold = MakeFoldConstants(0x04C11DB7u, 32);  // IEEE 802.3
constexpr FoldConstants kVcrcFold = MakeFoldConstants(0x100Bu, 16);       // IBTA VCRC

#define SOFTIB_CLMUL __attribute__((target("pclmul,sse4.1")))

SOFTIB_CLMUL inline __m128i Constants(FoldPair pair) {
  return _mm_set_epi64x(static_cast<long long>(pair.second_half),
                        static_cast<long long>(pair.first_half));
}

// `block` moved forward onto `target`.
SOFTIB_CLMUL inline __m128i FoldOnto(__m128i block, __m128i target, __m128i constants) {
  const __m128i first = _mm_clmulepi64_si128(block, constants, 0x00);
  const __m128i second = _mm_clmulepi64_si128(block, constants, 0x11);
  return _mm_xor_si128(_mm_xor_si128(first, second), target);
}

SOFTIB_CLMUL inline __m128i Load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

template <typename T, T (*Slicing)(T, std::span<const uint8_t>)>
SOFTIB_CLMUL T FoldedRegister(T reg, std::span<const uint8_t> data, const FoldConstants& k) {
  const uint8_t* p = data.data();
  std::size_t n = data.size();
  if (n < 64) return Slicing(reg, data);  // too short to pay for the set-up
  // The register enters as if XORed into the first W message bits.
  __m128i x0 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i x1 = Load(p + 16), x2 = Load(p + 32), x3 = Load(p + 48);
  p += 64;
  n -= 64;
  const __m128i by_four = Constants(k.by_four);
  for (; n >= 64; p += 64, n -= 64) {
    x0 = FoldOnto(x0, Load(p), by_four);
    x1 = FoldOnto(x1, Load(p + 16), by_four);
    x2 = FoldOnto(x2, Load(p + 32), by_four);
    x3 = FoldOnto(x3, Load(p + 48), by_four);
  }
  const __m128i by_one = Constants(k.by_one);
  x0 = FoldOnto(x0, x1, by_one);
  x0 = FoldOnto(x0, x2, by_one);
  x0 = FoldOnto(x0, x3, by_one);
  for (; n >= 16; p += 16, n -= 16) x0 = FoldOnto(x0, Load(p), by_one);
  // x0 now stands for everything so far: its CRC from a zero register is the register.
  alignas(16) uint8_t folded[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(folded), x0);
  const T after_folded = Slicing(0, std::span<const uint8_t>(folded, sizeof folded));
  return Slicing(after_folded, std::span<const uint8_t>(p, n));
}

}  // namespace

bool FoldingAvailable() {
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  }();
  return available;
}

uint32_t Crc32RegisterFolded(uint32_t reg, std::span<const uint8_t> data) {
  return FoldedRegister<uint32_t, Crc32RegisterSlicing>(reg, data, kCrc32Fold);
}

uint16_t VcrcRegisterFolded(uint16_t reg, std::span<const uint8_t> data) {
  return FoldedRegister<uint16_t, VcrcRegisterSlicing>(reg, data, kVcrcFold);
}

#else  // not x86-64 (the m32 build among them): the slicing tables only

bool FoldingAvailable() { return false; }
uint32_t Crc32RegisterFolded(uint32_t reg, std::span<const uint8_t> data) {
  return Crc32RegisterSlicing(reg, data);
}
uint16_t VcrcRegisterFolded(uint16_t reg, std::span<const uint8_t> data) {
  return VcrcRegisterSlicing(reg, data);
}

#endif

}  // namespace softib::ibcrc::detail
