// softib_bench_crc: the ICRC/VCRC cost per byte of the data path, against memcpy measured in
// the same run (every packet is CRCed twice on send — ICRC, then VCRC over it — and twice
// on receive). Rows per size, in GB/s: memcpy; CRC-32 and VCRC by the slicing tables and by
// carry-less-multiply folding (when the CPU has PCLMULQDQ); both registers at once in one
// fold (what a packet needs); then folded/tables and folded CRC-32 / memcpy. Best of five
// interleaved rounds (noise only ever slows a loop down).
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "softib/wire/ib_crc_internal.h"

namespace {

namespace crc = softib::ibcrc::detail;
using softib::bench::NowNs;

constexpr const char* kProgram = "softib_bench_crc";
constexpr int kRounds = 5;

[[noreturn]] void Die(const std::string& what) { softib::bench::Die(kProgram, what); }

double Rate(uint64_t ns, std::size_t size, uint32_t iterations) {
  return static_cast<double>(size) * iterations / static_cast<double>(ns ? ns : 1);
}

// GB/s of `fn` over `data`, `n` times, the register carried from call to call so no call
// can be skipped.
template <typename Fn>
double Measure(Fn fn, std::span<const uint8_t> data, uint32_t n) {
  uint32_t reg = 0;
  const uint64_t start = NowNs();
  for (uint32_t i = 0; i < n; ++i) reg = fn(reg, data);
  const uint64_t ns = NowNs() - start;
  asm volatile("" ::"r"(reg));
  return Rate(ns, data.size(), n);
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t iterations = 0;  // 0: about 64 MiB per size and round
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "-n" || arg == "--iters") && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v <= 0) Die("bad value for " + arg);
      iterations = static_cast<uint32_t>(v);
    } else {
      std::printf("usage: softib_bench_crc [-n ITERS]\n");
      return arg == "-h" || arg == "--help" ? 0 : 2;
    }
  }
  const bool folding = crc::FoldingAvailable();
  const std::vector<std::size_t> sizes = {256, 1024, 4096, 65536, 1u << 20};
  std::vector<uint8_t> source(1u << 20), scratch(1u << 20);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 131 + 7);

  struct Row {
    double memcpy = 0, crc32_tables = 0, crc32_folded = 0, vcrc_tables = 0, vcrc_folded = 0;
    double both_folded = 0;  // ICRC and VCRC registers in one fold (bytes per second of data)
  };
  std::vector<Row> rows(sizes.size());
  auto best = [](double& slot, double v) { slot = std::max(slot, v); };
  for (int round = 0; round < kRounds; ++round) {
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const std::span<const uint8_t> data(source.data(), sizes[k]);
      const uint32_t n =
          iterations ? iterations
                     : static_cast<uint32_t>(std::max<std::size_t>(16, (64u << 20) / sizes[k]));
      const uint64_t start = NowNs();
      for (uint32_t i = 0; i < n; ++i) {
        std::memcpy(scratch.data(), data.data(), data.size());
        asm volatile("" ::"r"(scratch.data()) : "memory");
      }
      best(rows[k].memcpy, Rate(NowNs() - start, data.size(), n));
      best(rows[k].crc32_tables, Measure(crc::Crc32RegisterSlicing, data, n));
      best(rows[k].vcrc_tables, Measure(
                                    [](uint32_t r, std::span<const uint8_t> d) -> uint32_t {
                                      return crc::VcrcRegisterSlicing(static_cast<uint16_t>(r), d);
                                    },
                                    data, n));
      if (folding) {
        best(rows[k].crc32_folded, Measure(crc::Crc32RegisterFolded, data, n));
        best(rows[k].vcrc_folded, Measure(
                                      [](uint32_t r, std::span<const uint8_t> d) -> uint32_t {
                                        return crc::VcrcRegisterFolded(static_cast<uint16_t>(r), d);
                                      },
                                      data, n));
        best(rows[k].both_folded, Measure(
                                      [](uint32_t r, std::span<const uint8_t> d) -> uint32_t {
                                        uint16_t vcrc = static_cast<uint16_t>(r);
                                        crc::BothRegistersFolded(&r, &vcrc, d);
                                        return r ^ vcrc;
                                      },
                                      data, n));
      }
    }
  }
  const char* line =
      "-----------------------------------------------------------------------------------------";
  std::printf("%s\n", line);
  std::printf("         softib ICRC/VCRC bandwidth against memcpy (best of %d rounds)\n", kRounds);
  std::printf(" GB/s = 10^9 bytes per second; folded: PCLMULQDQ (%s on this CPU)\n",
              folding ? "present" : "absent, columns 0");
  std::printf("%s\n", line);
  std::printf(" %-8s %-7s %-12s %-13s %-13s %-12s %-12s %-13s %-10s\n", "#bytes", "memcpy",
              "crc32/tables", "crc32/folded", "vcrc/tables", "vcrc/folded", "both/folded",
              "folded/tables", "crc32f/memcpy");
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const Row& r = rows[k];
    std::printf(" %-8zu %-7.2f %-12.2f %-13.2f %-13.2f %-12.2f %-12.2f %-13.2f %-10.2f\n", sizes[k],
                r.memcpy, r.crc32_tables, r.crc32_folded, r.vcrc_tables, r.vcrc_folded,
                r.both_folded, r.crc32_folded / r.crc32_tables, r.crc32_folded / r.memcpy);
  }
  std::printf("%s\n", line);
  return 0;
}
