// Reflected CRCs by carry-less multiplication, after Intel's "Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction" (Gopal et al., 2009): the message is
// cut into 128-bit blocks and each block is folded forward onto a later one by multiplying
// its two 64-bit halves with x^D mod P (D the distance folded), which keeps the value the
// same modulo P. Four blocks fold in parallel (512 bits per step), then into one; the last
// 128 bits and the tail bytes finish through the slicing tables instead of a Barrett
// reduction, so one code path serves every polynomial of up to 32 bits (ICRC and VCRC).
// Where the CPU has VPCLMULQDQ and AVX-512, 512-bit registers fold four blocks per
// instruction (FoldToBlock512). A packet's ICRC and VCRC share one fold modulo the
// product of their polynomials (BothRegistersFolded).
//
// Bit order: a reflected CRC feeds each byte least significant bit first, so in a
// little-endian 128-bit load bit i is the coefficient of x^(127-i) of the block. For a
// 64-bit half (bit j <-> x^(63-j)) times a constant C, PCLMULQDQ's result bit i is the
// coefficient of x^(126-i) of the product; the block layout wants x^(127-i), so the
// constant is stored as x * (x^(D-1) mod P), bit-reversed into 64 bits: still congruent
// to x^D, and of degree <= 32, so a product never exceeds 96 bits.
#include "softib/wire/ib_crc_internal.h"

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
  FoldPair by_16;    // 2048 bits: the 512-bit path's four registers of four blocks each
};

constexpr FoldConstants MakeFoldConstants(uint64_t poly, unsigned width) {
  return {{FoldConstant(512 + 64, poly, width), FoldConstant(512, poly, width)},
          {FoldConstant(128 + 64, poly, width), FoldConstant(128, poly, width)},
          {FoldConstant(2048 + 64, poly, width), FoldConstant(2048, poly, width)}};
}

constexpr uint64_t kCrc32Poly = 0x04C11DB7u;  // IEEE 802.3, without its x^32
constexpr uint64_t kVcrcPoly = 0x100Bu;       // IBTA VCRC, without its x^16
constexpr FoldConstants kCrc32Fold = MakeFoldConstants(kCrc32Poly, 32);
constexpr FoldConstants kVcrcFold = MakeFoldConstants(kVcrcPoly, 16);

// Both CRCs of one span in a single fold: folding modulo the product Q = P32 * P16 (degree
// 48) keeps the data's value modulo each factor, and a 64-bit half times a constant of
// degree <= 48 still fits 128 bits. Half the multiplications of two separate folds.
constexpr uint64_t CarrylessProduct(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i)
    if ((b >> i) & 1) r ^= a << i;
  return r;
}
constexpr unsigned kProductWidth = 48;
constexpr uint64_t kProductPoly =
    CarrylessProduct((uint64_t{1} << 32) | kCrc32Poly, (uint64_t{1} << 16) | kVcrcPoly) ^
    (uint64_t{1} << kProductWidth);
static_assert(kProductPoly < (uint64_t{1} << kProductWidth), "P32 * P16 has degree 48");
constexpr FoldConstants kProductFold = MakeFoldConstants(kProductPoly, kProductWidth);

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

// The same folding with 512-bit registers (VPCLMULQDQ, AVX-512): four blocks per
// instruction, four registers in flight (256 bytes per step), then down to four blocks and
// to one. Returns the block for everything up to the last whole 64 bytes; *rest is what
// remains (< 64 bytes) for the 128-bit loop.
#define SOFTIB_CLMUL512 __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.1")))

// The pair in every 128-bit lane. (Built with set, not broadcast/extract intrinsics: GCC 12
// flags those as reading an uninitialised register.)
SOFTIB_CLMUL512 inline __m512i Constants512(FoldPair pair) {
  const auto first = static_cast<long long>(pair.first_half);
  const auto second = static_cast<long long>(pair.second_half);
  return _mm512_set_epi64(second, first, second, first, second, first, second, first);
}

SOFTIB_CLMUL512 inline __m512i FoldOnto512(__m512i blocks, __m512i target, __m512i constants) {
  const __m512i first = _mm512_clmulepi64_epi128(blocks, constants, 0x00);
  const __m512i second = _mm512_clmulepi64_epi128(blocks, constants, 0x11);
  return _mm512_xor_si512(_mm512_xor_si512(first, second), target);
}

SOFTIB_CLMUL512 __m128i FoldToBlock512(std::span<const uint8_t> data, __m128i first,
                                       const FoldConstants& k, std::span<const uint8_t>* rest) {
  const uint8_t* p = data.data();
  std::size_t n = data.size();  // >= 256
  __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_zextsi128_si512(first));
  __m512i z1 = _mm512_loadu_si512(p + 64), z2 = _mm512_loadu_si512(p + 128),
          z3 = _mm512_loadu_si512(p + 192);
  p += 256;
  n -= 256;
  const __m512i by_16 = Constants512(k.by_16);
  for (; n >= 256; p += 256, n -= 256) {
    z0 = FoldOnto512(z0, _mm512_loadu_si512(p), by_16);
    z1 = FoldOnto512(z1, _mm512_loadu_si512(p + 64), by_16);
    z2 = FoldOnto512(z2, _mm512_loadu_si512(p + 128), by_16);
    z3 = FoldOnto512(z3, _mm512_loadu_si512(p + 192), by_16);
  }
  const __m512i by_four = Constants512(k.by_four);
  z0 = FoldOnto512(z0, z1, by_four);
  z0 = FoldOnto512(z0, z2, by_four);
  z0 = FoldOnto512(z0, z3, by_four);
  for (; n >= 64; p += 64, n -= 64) z0 = FoldOnto512(z0, _mm512_loadu_si512(p), by_four);
  alignas(64) uint8_t blocks[64];
  _mm512_store_si512(blocks, z0);
  const __m128i by_one = Constants(k.by_one);
  __m128i x0 = FoldOnto(Load(blocks), Load(blocks + 16), by_one);
  x0 = FoldOnto(x0, Load(blocks + 32), by_one);
  x0 = FoldOnto(x0, Load(blocks + 48), by_one);
  *rest = std::span<const uint8_t>(p, n);
  return x0;
}

bool Wide512Available() {
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
           __builtin_cpu_supports("pclmul");
  }();
  return available;
}

// Folds the whole 16-byte blocks of `data` (size >= 64), the first XORed with `first`, into
// one block congruent to them modulo the polynomial(s) of `k`.
SOFTIB_CLMUL __m128i FoldToBlock(std::span<const uint8_t> data, __m128i first,
                                 const FoldConstants& k) {
  if (data.size() >= 512 && Wide512Available()) {
    std::span<const uint8_t> rest;
    __m128i x0 = FoldToBlock512(data, first, k, &rest);
    const __m128i by_one = Constants(k.by_one);
    for (; rest.size() >= 16; rest = rest.subspan(16)) x0 = FoldOnto(x0, Load(rest.data()), by_one);
    return x0;
  }
  const uint8_t* p = data.data();
  std::size_t n = data.size();
  __m128i x0 = _mm_xor_si128(Load(p), first);
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
  return x0;
}

// ---- one 16-byte block to a register, without tables -----------------------------------
// Per packet the fold ends in a few 16-byte blocks (headers, the last block, the register
// carried across); through the slicing tables those cost as much as folding 4 KiB, because
// the payload has evicted the tables by then. Here a block is reduced in the normal bit
// order instead: reversed (bit d <-> x^d), the register is N(x) * x^W mod P, taken in two
// folds and a Barrett step, then reflected back.
//   N = A x^64 + B          ->  T = A (x^(64+W) mod P) + B (x^W mod P)   (degree < 64 + W)
//   T = C x^64 + D          ->  E = C (x^64 mod P) + D                  (degree < 64)
//   E mod P = E + P * floor(floor(E / x^W) * mu / x^(64-W)),  mu = floor(x^64 / P)
// (over GF(2) the Barrett quotient is exact for degree(E) < 64: no correction step).
constexpr uint64_t Floor64ByPoly(uint64_t poly, unsigned width) {
  // x^64 / (x^width + poly) by long division, quotient of degree 64 - width.
  const unsigned __int128 divisor = (static_cast<unsigned __int128>(1) << width) | poly;
  unsigned __int128 rest = static_cast<unsigned __int128>(1) << 64;
  uint64_t quotient = 0;
  for (int d = 64 - static_cast<int>(width); d >= 0; --d) {
    if ((rest >> (d + width)) & 1) {
      quotient |= uint64_t{1} << d;
      rest ^= divisor << d;
    }
  }
  return quotient;
}

struct ReductionConstants {
  uint64_t by_64_plus_w, by_w, by_64, mu, poly_with_top;
  unsigned width;
};

constexpr ReductionConstants MakeReduction(uint64_t poly, unsigned width) {
  return {XPowerModPoly(64 + width, poly, width), XPowerModPoly(width, poly, width),
          XPowerModPoly(64, poly, width),         Floor64ByPoly(poly, width),
          (uint64_t{1} << width) | poly,          width};
}
constexpr ReductionConstants kCrc32Reduction = MakeReduction(kCrc32Poly, 32);
constexpr ReductionConstants kVcrcReduction = MakeReduction(kVcrcPoly, 16);

// All 128 bits in reverse order: each byte's bits (a nibble table), then the bytes.
SOFTIB_CLMUL inline __m128i Reverse128(__m128i v) {
  const __m128i reversed_nibble =
      _mm_setr_epi8(0x0, 0x8, 0x4, 0xC, 0x2, 0xA, 0x6, 0xE, 0x1, 0x9, 0x5, 0xD, 0x3, 0xB, 0x7, 0xF);
  const __m128i low_nibbles = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_shuffle_epi8(reversed_nibble, _mm_and_si128(v, low_nibbles));
  const __m128i high =
      _mm_shuffle_epi8(reversed_nibble, _mm_and_si128(_mm_srli_epi16(v, 4), low_nibbles));
  const __m128i bytes_reversed = _mm_or_si128(_mm_slli_epi16(low, 4), high);
  return _mm_shuffle_epi8(bytes_reversed,
                          _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
}

constexpr uint64_t ReverseLow(uint64_t v, unsigned width) {
  uint64_t r = 0;
  for (unsigned i = 0; i < width; ++i) r |= ((v >> i) & 1) << (width - 1 - i);
  return r;
}

SOFTIB_CLMUL inline uint64_t Clmul64(uint64_t a, uint64_t b, uint64_t* high) {
  const __m128i product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(static_cast<long long>(a)),
                                               _mm_cvtsi64_si128(static_cast<long long>(b)), 0x00);
  *high = static_cast<uint64_t>(_mm_extract_epi64(product, 1));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(product));
}

// The register a CRC from a zero register has after the 16 bytes of `block` (bit i of the
// little-endian block is the i-th bit the CRC takes in).
template <typename T>
SOFTIB_CLMUL T ReduceBlock(__m128i block, const ReductionConstants& k) {
  const unsigned w = k.width;
  const __m128i n = Reverse128(block);
  const __m128i folds =
      _mm_set_epi64x(static_cast<long long>(k.by_64_plus_w), static_cast<long long>(k.by_w));
  const __m128i t = _mm_xor_si128(_mm_clmulepi64_si128(n, folds, 0x11),   // A * x^(64+W)
                                  _mm_clmulepi64_si128(n, folds, 0x00));  // B * x^W
  const uint64_t c = static_cast<uint64_t>(_mm_extract_epi64(t, 1));
  const uint64_t d = static_cast<uint64_t>(_mm_cvtsi128_si64(t));
  uint64_t unused = 0;
  const uint64_t e = Clmul64(c, k.by_64, &unused) ^ d;
  uint64_t q_high = 0;
  const uint64_t q_low = Clmul64(e >> w, k.mu, &q_high);
  const uint64_t quotient = (q_low >> (64 - w)) | (w == 64 ? 0 : q_high << w);
  const uint64_t remainder = e ^ Clmul64(quotient, k.poly_with_top, &unused);
  return static_cast<T>(ReverseLow(remainder & ((uint64_t{1} << w) - 1), w));
}

template <typename T>
const ReductionConstants& ReductionFor();
template <>
const ReductionConstants& ReductionFor<uint32_t>() {
  return kCrc32Reduction;
}
template <>
const ReductionConstants& ReductionFor<uint16_t>() {
  return kVcrcReduction;
}

// The register after a folded block and then `tail`: the block stands for everything before
// it, so its CRC from the register `reg` (0: the block already holds the register) is exact.
template <typename T, T (*Slicing)(T, std::span<const uint8_t>)>
SOFTIB_CLMUL T FinishBlock(T reg, __m128i block, std::span<const uint8_t> tail) {
  // A register enters as if XORed into the block's first W bits.
  const __m128i with_register = _mm_xor_si128(block, _mm_cvtsi32_si128(static_cast<int>(reg)));
  const T after_block = ReduceBlock<T>(with_register, ReductionFor<T>());
  return tail.empty() ? after_block : Slicing(after_block, tail);
}

template <typename T, T (*Slicing)(T, std::span<const uint8_t>)>
SOFTIB_CLMUL T FoldedRegister(T reg, std::span<const uint8_t> data, const FoldConstants& k) {
  if (data.size() < 64) return Slicing(reg, data);  // too short to pay for the set-up
  // The register enters as if XORed into the first W message bits.
  const __m128i block = FoldToBlock(data, _mm_cvtsi32_si128(static_cast<int>(reg)), k);
  const std::size_t folded = data.size() & ~std::size_t{15};
  return FinishBlock<T, Slicing>(0, block, data.subspan(folded));
}

// x^e mod P by square-and-multiply, for the run-time distances of AdvanceRegister.
uint64_t MultiplyModPoly(uint64_t a, uint64_t b, uint64_t poly, unsigned width) {
  const uint64_t top = uint64_t{1} << width;
  uint64_t r = 0;
  for (int i = static_cast<int>(width) - 1; i >= 0; --i) {  // Horner over b's bits
    r <<= 1;
    if (r & top) r ^= top | poly;
    if ((b >> i) & 1) r ^= a;
  }
  return r;
}

uint64_t XPowerModPolyFast(uint64_t e, uint64_t poly, unsigned width) {
  uint64_t result = 1, square = 2;  // x^0, x^1
  for (; e != 0; e >>= 1) {
    if (e & 1) result = MultiplyModPoly(result, square, poly, width);
    square = MultiplyModPoly(square, square, poly, width);
  }
  return result;
}

// Packets of a message share their length, so a few remembered constants serve nearly
// every call.
class FoldConstantCache {
 public:
  uint64_t Get(uint64_t distance, uint64_t poly, unsigned width) {
    for (const Entry& e : entries_)
      if (e.distance == distance) return e.constant;
    Entry& slot = entries_[next_++ % std::size(entries_)];
    slot = {distance, Reverse64(XPowerModPolyFast(distance - 1, poly, width))};
    return slot.constant;
  }

 private:
  struct Entry {
    uint64_t distance = 0, constant = 0;  // distance 0 is never asked for
  };
  Entry entries_[4];
  unsigned next_ = 0;
};

// The register `reg` carried across `bytes` zero bytes (bytes >= 16): the register XORs into
// the first W bits of those bytes, so it is the CRC, from a zero register, of a 16-byte block
// holding reg first and zeros after it, followed by bytes - 16 zeros. That block folds
// forward onto the last 16 bytes in one multiplication (its second half is zero), then
// finishes through the tables.
template <typename T, T (*Slicing)(T, std::span<const uint8_t>)>
SOFTIB_CLMUL T AdvanceRegister(T reg, std::size_t bytes, uint64_t poly, unsigned width,
                               FoldConstantCache& cache) {
  const uint64_t distance = 8 * (uint64_t{bytes} - 16);
  if (distance == 0) {
    return FinishBlock<T, Slicing>(0, _mm_cvtsi32_si128(static_cast<int>(reg)), {});
  }
  const __m128i constant =
      _mm_cvtsi64_si128(static_cast<long long>(cache.Get(distance + 64, poly, width)));
  const __m128i moved =
      _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(reg)), constant, 0x00);
  return FinishBlock<T, Slicing>(0, moved, {});
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

void BothRegistersFolded(uint32_t* crc32_reg, uint16_t* vcrc_reg, std::span<const uint8_t> data) {
  if (data.size() < kBothFoldMinimum) {
    *crc32_reg = Crc32RegisterFolded(*crc32_reg, data);
    *vcrc_reg = VcrcRegisterFolded(*vcrc_reg, data);
    return;
  }
  // Fold from a zero register modulo P32 * P16; each register then enters by linearity:
  // CRC(reg, D) = CRC(reg advanced across all but the last block, last block ++ tail).
  const __m128i block = FoldToBlock(data, _mm_setzero_si128(), kProductFold);
  const std::size_t folded = data.size() & ~std::size_t{15};
  const std::span<const uint8_t> tail = data.subspan(folded);
  thread_local FoldConstantCache crc32_cache, vcrc_cache;
  const uint32_t crc32_before = AdvanceRegister<uint32_t, Crc32RegisterSlicing>(
      *crc32_reg, folded - 16, kCrc32Poly, 32, crc32_cache);
  const uint16_t vcrc_before = AdvanceRegister<uint16_t, VcrcRegisterSlicing>(
      *vcrc_reg, folded - 16, kVcrcPoly, 16, vcrc_cache);
  *crc32_reg = FinishBlock<uint32_t, Crc32RegisterSlicing>(crc32_before, block, tail);
  *vcrc_reg = FinishBlock<uint16_t, VcrcRegisterSlicing>(vcrc_before, block, tail);
}

#else  // not x86-64 (the m32 build among them): the slicing tables only

bool FoldingAvailable() { return false; }
uint32_t Crc32RegisterFolded(uint32_t reg, std::span<const uint8_t> data) {
  return Crc32RegisterSlicing(reg, data);
}
uint16_t VcrcRegisterFolded(uint16_t reg, std::span<const uint8_t> data) {
  return VcrcRegisterSlicing(reg, data);
}
void BothRegistersFolded(uint32_t* crc32_reg, uint16_t* vcrc_reg, std::span<const uint8_t> data) {
  *crc32_reg = Crc32RegisterSlicing(*crc32_reg, data);
  *vcrc_reg = VcrcRegisterSlicing(*vcrc_reg, data);
}

#endif

}  // namespace softib::ibcrc::detail
