// softib_bench_topology: reading and writing ibnetdiscover topology files of the benchmark
// fabrics (ft36, ft92 and the 13,284-node ft-k36), against floors measured in the same run
// on the same text: a memchr scan that finds every line (what any line-based reader must
// do) for reading, and a memcpy of the text for writing. Rows: preset, nodes, bytes, read
// and write in ms, and read/scan and write/memcpy ratios. Best of --rounds rounds (noise
// only ever slows a loop down).
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"

namespace {

using softib::bench::NowNs;
namespace fabric = softib::fabric;

constexpr const char* kProgram = "softib_bench_topology";

[[noreturn]] void Die(const std::string& what) { softib::bench::Die(kProgram, what); }

double Ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

std::size_t CountLines(const std::string& text) {
  std::size_t lines = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    if (nl == nullptr) break;
    p = static_cast<const char*>(nl) + 1;
    ++lines;
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--rounds" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v <= 0) Die("bad value for " + arg);
      rounds = static_cast<int>(v);
    } else {
      std::printf("usage: softib_bench_topology [--rounds N]\n");
      return arg == "-h" || arg == "--help" ? 0 : 2;
    }
  }
  std::printf("%-8s %7s %9s %9s %9s %9s %9s %10s %10s\n", "preset", "nodes", "bytes", "read_ms",
              "scan_ms", "write_ms", "copy_ms", "read/scan", "write/copy");
  for (const char* name : {"ft36", "ft92", "ft-k36"}) {
    const auto topology = fabric::MakePreset(name);
    if (!topology) Die(std::string("no preset ") + name);
    uint64_t read_ns = ~0ull, scan_ns = ~0ull, write_ns = ~0ull, copy_ns = ~0ull;
    std::string text = fabric::WriteIbnetdiscover(*topology).text;
    std::string copy(text.size(), '\0');
    for (int round = 0; round < rounds; ++round) {
      uint64_t t0 = NowNs();
      const std::size_t lines = CountLines(text);
      uint64_t t1 = NowNs();
      asm volatile("" ::"r"(lines));
      scan_ns = std::min(scan_ns, t1 - t0);

      t0 = NowNs();
      fabric::ReadResult r = fabric::ReadIbnetdiscover(text, name);
      t1 = NowNs();
      if (!r.ok()) Die(r.error);
      read_ns = std::min(read_ns, t1 - t0);

      t0 = NowNs();
      std::memcpy(copy.data(), text.data(), text.size());
      t1 = NowNs();
      asm volatile("" ::"r"(copy.data()) : "memory");
      copy_ns = std::min(copy_ns, t1 - t0);

      t0 = NowNs();
      fabric::WriteResult w = fabric::WriteIbnetdiscover(*r.topology);
      t1 = NowNs();
      if (!w.ok() || w.text != text) Die(std::string(name) + ": the round trip changed the text");
      write_ns = std::min(write_ns, t1 - t0);
    }
    std::printf("%-8s %7zu %9zu %9.2f %9.3f %9.2f %9.3f %10.1f %10.1f\n", name,
                topology->nodes().size(), text.size(), Ms(read_ns), Ms(scan_ns), Ms(write_ns),
                Ms(copy_ns),
                static_cast<double>(read_ns) / static_cast<double>(scan_ns ? scan_ns : 1),
                static_cast<double>(write_ns) / static_cast<double>(copy_ns ? copy_ns : 1));
  }
  return 0;
}
