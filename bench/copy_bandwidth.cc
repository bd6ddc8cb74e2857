// softib_bench_copy: the bandwidth floors of the data path, in the spirit of ib_write_bw -a:
//   memcpy              within one process (what a kernel-client RDMA WRITE can reach)
//   process_vm_readv    from a forked process's buffer into ours (what the HCA can reach
//                       when it moves a user process's data: it is the HCA's DMA engine)
//   process_vm_writev   from ours into the forked process's buffer
// Sizes 4 KiB ... 4 MiB (powers of two) or one size with -s. Every copy is timed in a loop
// of -n iterations (default: enough for about 256 MiB per size, at least 16); the best of
// five interleaved rounds is reported (noise only ever slows a copy down).
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tied_child.h"

namespace {

using softib::bench::NowNs;

constexpr const char* kProgram = "softib_bench_copy";
constexpr int kRounds = 5;
constexpr size_t kMaxSize = 4u << 20;

[[noreturn]] void Die(const std::string& what) { softib::bench::Die(kProgram, what); }

struct Options {
  size_t size = 0;          // 0: all sizes
  uint32_t iterations = 0;  // 0: automatic
  bool csv = false;
};

uint32_t IterationsFor(const Options& o, size_t size) {
  if (o.iterations) return o.iterations;
  return static_cast<uint32_t>(std::max<size_t>(16, (256u << 20) / size / kRounds));
}

// GB/s of `iterations` copies of `size` bytes.
double Rate(uint64_t ns, size_t size, uint32_t iterations) {
  return static_cast<double>(size) * iterations / static_cast<double>(ns);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) Die(arg + " needs a value");
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v <= 0) Die("bad value for " + arg);
      return v;
    };
    if (arg == "-s" || arg == "--size") {
      o.size = static_cast<size_t>(value());
      if (o.size > kMaxSize) Die("--size: at most 4 MiB");
    } else if (arg == "-n" || arg == "--iters") {
      o.iterations = static_cast<uint32_t>(value());
    } else if (arg == "--csv") {
      o.csv = true;
    } else {
      std::printf(
          "usage: softib_bench_copy [-s BYTES] [-n ITERS] [--csv]\n"
          "  -s, --size BYTES  one size (default: 4 KiB ... 4 MiB)\n"
          "  -n, --iters N     copies per size and round (default: ~256 MiB per size)\n"
          "  --csv             comma-separated rows\n");
      return arg == "-h" || arg == "--help" ? 0 : 2;
    }
  }
  std::vector<size_t> sizes;
  if (o.size) {
    sizes.push_back(o.size);
  } else {
    for (size_t s = 4096; s <= kMaxSize; s *= 2) sizes.push_back(s);
  }

  // The peer: a forked process whose copy of `remote` (same address after fork) we read and
  // write. Its pages are made its own (touched after fork) so nothing is shared COW.
  std::vector<char> local(kMaxSize, 1), remote(kMaxSize, 2), scratch(kMaxSize, 3);
  int pipes[2][2];
  if (pipe(pipes[0]) != 0 || pipe(pipes[1]) != 0) Die("pipe");
  const pid_t parent = getpid();
  pid_t peer = fork();
  if (peer < 0) Die("fork");
  if (peer == 0) {
    softib::test_support::DieWithParent(parent);
    std::memset(remote.data(), 0x5a, remote.size());
    char byte = 1;
    if (write(pipes[0][1], &byte, 1) != 1) _exit(1);
    while (read(pipes[1][0], &byte, 1) < 0) {
    }
    _exit(remote[12345] == 0x5a || remote[12345] == 1 ? 0 : 2);
  }
  char byte = 0;
  if (read(pipes[0][0], &byte, 1) != 1) Die("peer failed to start");

  struct Result {
    double memcpy_gbs = 0, readv_gbs = 0, writev_gbs = 0;
  };
  std::vector<Result> results(sizes.size());
  for (int round = 0; round < kRounds; ++round) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      size_t size = sizes[k];
      uint32_t n = IterationsFor(o, size);
      uint64_t start = NowNs();
      for (uint32_t i = 0; i < n; ++i) {
        std::memcpy(scratch.data(), local.data(), size);
        asm volatile("" ::"r"(scratch.data()) : "memory");  // keep every copy
      }
      results[k].memcpy_gbs = std::max(results[k].memcpy_gbs, Rate(NowNs() - start, size, n));

      iovec mine{local.data(), size};
      iovec theirs{remote.data(), size};
      start = NowNs();
      for (uint32_t i = 0; i < n; ++i) {
        if (process_vm_readv(peer, &mine, 1, &theirs, 1, 0) != static_cast<ssize_t>(size)) {
          Die("process_vm_readv: " + std::string(std::strerror(errno)));
        }
      }
      results[k].readv_gbs = std::max(results[k].readv_gbs, Rate(NowNs() - start, size, n));

      start = NowNs();
      for (uint32_t i = 0; i < n; ++i) {
        if (process_vm_writev(peer, &mine, 1, &theirs, 1, 0) != static_cast<ssize_t>(size)) {
          Die("process_vm_writev: " + std::string(std::strerror(errno)));
        }
      }
      results[k].writev_gbs = std::max(results[k].writev_gbs, Rate(NowNs() - start, size, n));
    }
  }
  if (write(pipes[1][1], &byte, 1) != 1) Die("pipe");
  int status = 0;
  if (waitpid(peer, &status, 0) != peer || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die("the peer process failed");
  }

  const char* line =
      "----------------------------------------------------------------------------------------";
  if (o.csv) {
    std::printf(
        "bytes,iterations,memcpy_gbs,process_vm_readv_gbs,process_vm_writev_gbs,"
        "readv_over_memcpy\n");
  } else {
    std::printf("%s\n", line);
    std::printf("             softib data-path floors: copy bandwidth (best of %d rounds)\n",
                kRounds);
    std::printf(" GB/s = 10^9 bytes per second; process_vm_* between two processes\n");
    std::printf("%s\n", line);
    std::printf(" %-9s %-11s %-13s %-21s %-22s %-10s\n", "#bytes", "#iterations", "memcpy[GB/s]",
                "process_vm_readv[GB/s]", "process_vm_writev[GB/s]", "readv/memcpy");
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Result& r = results[k];
    std::printf(
        o.csv ? "%zu,%u,%.3f,%.3f,%.3f,%.3f\n" : " %-9zu %-11u %-13.2f %-22.2f %-23.2f %-10.2f\n",
        sizes[k], IterationsFor(o, sizes[k]), r.memcpy_gbs, r.readv_gbs, r.writev_gbs,
        r.readv_gbs / r.memcpy_gbs);
  }
  if (!o.csv) std::printf("%s\n", line);
  return 0;
}
