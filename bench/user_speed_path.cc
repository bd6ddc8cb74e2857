// softib_bench_user: the speed path between two user processes, through softib_perf
// processes against a softibd this bench starts (own run directory under /tmp, stopped by
// pid), each figure next to its floor measured in the same run:
//
//   send_lat     RC SEND 8 B one-way latency (t_typical)  ÷ shared-memory spin ping-pong
//                                                           between two processes (goal <= 1 us)
//   write_bw     RDMA WRITE 4 KiB ... 4 MiB (average)      ÷ process_vm_readv at 1 MiB
//                                                           (goal >= 0.8)
//   send_rate    8 B SENDs per second (send_bw MsgRate)      goal >= 5 M msg/s
//
// softib_perf's own output (JSON) is parsed; a failing run prints its stderr and the bench
// exits 1.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tied_child.h"

namespace {

using softib::bench::CpuRelax;
using softib::bench::NowNs;

constexpr const char* kProgram = "softib_bench_user";
[[noreturn]] void Die(const std::string& what) { softib::bench::Die(kProgram, what); }

struct Options {
  uint32_t lat_iterations = 20000;
  uint64_t bytes_per_size = 256u << 20;
  uint32_t rate_messages = 1000000;
  uint32_t size = 0;  // write_bw: one size; 0: 4 KiB ... 4 MiB
};

// ---- floors ----------------------------------------------------------------------------

// Two processes bounce a counter through one shared cache line each way, spinning.
double ShmSpinOneWayUs(uint32_t iterations) {
  struct alignas(64) Line {
    std::atomic<uint32_t> value{0};
  };
  void* memory = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) Die("mmap");
  auto* ping = new (memory) Line();
  auto* pong = new (static_cast<char*>(memory) + 64) Line();
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) Die("fork");
  if (child == 0) {
    softib::test_support::DieWithParent(parent);
    for (uint32_t i = 1; i <= iterations; ++i) {
      while (ping->value.load(std::memory_order_acquire) != i) CpuRelax();
      pong->value.store(i, std::memory_order_release);
    }
    _exit(0);
  }
  std::vector<double> samples(iterations);
  for (uint32_t i = 1; i <= iterations; ++i) {
    const uint64_t start = NowNs();
    ping->value.store(i, std::memory_order_release);
    while (pong->value.load(std::memory_order_acquire) != i) CpuRelax();
    samples[i - 1] = static_cast<double>(NowNs() - start) / 2000.0;
  }
  waitpid(child, nullptr, 0);
  munmap(memory, 4096);
  return softib::bench::Summarize(samples).typical;
}

// GB/s of process_vm_readv from a forked process, 1 MiB at a time (best of 3 rounds).
double ReadvGbs(size_t size, uint32_t iterations) {
  std::vector<char> local(size, 1), remote(size, 2);
  int pipes[2];
  if (pipe(pipes) != 0) Die("pipe");
  const pid_t parent = getpid();
  const pid_t peer = fork();
  if (peer < 0) Die("fork");
  if (peer == 0) {
    softib::test_support::DieWithParent(parent);
    std::memset(remote.data(), 0x5a, remote.size());  // its own pages, not shared COW
    close(pipes[1]);
    char byte;
    while (read(pipes[0], &byte, 1) < 0) {
    }
    _exit(0);
  }
  close(pipes[0]);
  usleep(10000);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    iovec mine{local.data(), size}, theirs{remote.data(), size};
    const uint64_t start = NowNs();
    for (uint32_t i = 0; i < iterations; ++i) {
      if (process_vm_readv(peer, &mine, 1, &theirs, 1, 0) != static_cast<ssize_t>(size)) {
        Die(std::string("process_vm_readv: ") + std::strerror(errno));
      }
    }
    best = std::max(best, static_cast<double>(size) * iterations / (NowNs() - start));
  }
  close(pipes[1]);
  waitpid(peer, nullptr, 0);
  return best;
}

// ---- processes --------------------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;
};

Child Spawn(const std::vector<std::string>& args, int ready_fd = -1) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) Die("pipe");
  Child child;
  const pid_t parent = getpid();
  child.pid = fork();
  if (child.pid < 0) Die("fork");
  if (child.pid == 0) {
    softib::test_support::DieWithParent(parent);  // SIGKILL: softibd too, however we end
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (ready_fd >= 0) dup2(ready_fd, 3);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  child.out = out[0];
  child.err = err[0];
  return child;
}

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  close(fd);
  return text;
}

int WaitExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class Daemon {
 public:
  explicit Daemon(const std::string& dir) : run_dir_(dir + "/run") {
    int ready[2];
    if (pipe(ready) != 0) Die("pipe");
    child_ = Spawn({SOFTIBD_BINARY, "--run-dir", run_dir_, "--ready-fd", "3"}, ready[1]);
    close(ready[1]);
    char line[16] = {};
    const ssize_t n = read(ready[0], line, sizeof line - 1);
    close(ready[0]);
    if (n <= 0 || std::string(line).rfind("ready", 0) != 0) {
      Die("softibd did not start: " + ReadAll(child_.err));
    }
  }
  ~Daemon() {
    kill(child_.pid, SIGTERM);  // by pid: the daemon this bench started
    WaitExit(child_.pid);
    close(child_.out);
    close(child_.err);
  }
  const std::string& run_dir() const { return run_dir_; }

 private:
  std::string run_dir_;
  Child child_;
};

// One softib_perf server + client pair; the client's JSON.
nlohmann::json RunPair(const std::string& dir, const Daemon& daemon,
                       const std::vector<std::string>& test_args) {
  const std::string oob = "unix:" + dir + "/oob.sock";
  std::vector<std::string> server = {SOFTIB_PERF_BINARY};
  server.insert(server.end(), test_args.begin(), test_args.end());
  std::vector<std::string> client = server;
  for (auto* args : {&server, &client}) {
    args->insert(args->end(), {"--run-dir", daemon.run_dir(), "--oob", oob, "--json"});
  }
  client.push_back("--connect");
  Child s = Spawn(server);
  Child c = Spawn(client);
  const std::string out = ReadAll(c.out);
  const std::string err = ReadAll(c.err);
  const int client_rc = WaitExit(c.pid);
  ReadAll(s.out);
  const std::string server_err = ReadAll(s.err);
  const int server_rc = WaitExit(s.pid);
  if (client_rc != 0 || server_rc != 0) {
    std::string what;
    for (const auto& a : test_args) what += a + " ";
    throw std::runtime_error("softib_perf " + what + "failed (client " + std::to_string(client_rc) +
                             ", server " + std::to_string(server_rc) + "):\n" + err + server_err);
  }
  return nlohmann::json::parse(out);
}

void Run(const Options& o, const std::string& dir, double shm_us, double readv_gbs);

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> uint64_t {
      if (i + 1 >= argc) Die(arg + " needs a value");
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0' || v == 0) Die("bad value for " + arg);
      return v;
    };
    if (arg == "--iters") {
      o.lat_iterations = static_cast<uint32_t>(value());
    } else if (arg == "--bytes") {
      o.bytes_per_size = value();
    } else if (arg == "--messages") {
      o.rate_messages = static_cast<uint32_t>(value());
    } else if (arg == "-s" || arg == "--size") {
      o.size = static_cast<uint32_t>(std::min<uint64_t>(value(), 4u << 20));
    } else {
      std::printf(
          "usage: softib_bench_user [--iters N] [--bytes N] [--messages N] [-s BYTES]\n"
          "  --iters N     send_lat round trips (default 20000)\n"
          "  --bytes N     bytes write_bw moves per size (default 256 MiB)\n"
          "  --messages N  8-byte sends of the rate row (default 1000000)\n"
          "  -s BYTES      write_bw at one size (default 4 KiB ... 4 MiB)\n");
      return arg == "-h" || arg == "--help" ? 0 : 2;
    }
  }
  char pattern[] = "/tmp/softib_bench_user.XXXXXX";
  if (mkdtemp(pattern) == nullptr) Die("mkdtemp");
  const std::string dir = pattern;
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};

  const double shm_us = ShmSpinOneWayUs(o.lat_iterations);
  const double readv_gbs = ReadvGbs(
      1u << 20, static_cast<uint32_t>(std::max<uint64_t>(16, o.bytes_per_size / (1u << 20) / 3)));
  try {
    Run(o, dir, shm_us, readv_gbs);
  } catch (const std::exception& e) {  // after the daemon stopped and the directory went
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
  return 0;
}

namespace {

void Run(const Options& o, const std::string& dir, double shm_us, double readv_gbs) {
  Daemon daemon(dir);

  const char* rule =
      "---------------------------------------------------------------------------------------";
  std::printf("%s\n softib speed path between two user processes (softibd, RC)\n%s\n", rule, rule);
  const nlohmann::json lat =
      RunPair(dir, daemon, {"send_lat", "-s", "8", "-n", std::to_string(o.lat_iterations)});
  const double lat_us = lat["results"][0]["t_typical_us"].get<double>();
  std::printf(" %-12s %-8s %-12s %-14s %-14s %-8s\n", "row", "#bytes", "#iterations", "softib",
              "floor", "ratio");
  std::printf(" %-12s %-8u %-12u %-14s %-14s %-8.2f\n", "send_lat", 8u, o.lat_iterations,
              (std::to_string(lat_us).substr(0, 6) + " us").c_str(),
              (std::to_string(shm_us).substr(0, 6) + " us").c_str(), lat_us / shm_us);
  std::fflush(stdout);

  std::vector<uint32_t> sizes;
  if (o.size) {
    sizes.push_back(o.size);
  } else {
    for (uint32_t s = 4096; s <= (4u << 20); s *= 2) sizes.push_back(s);
  }
  for (uint32_t size : sizes) {
    const uint64_t n = std::max<uint64_t>(8, o.bytes_per_size / size);
    const nlohmann::json bw = RunPair(
        dir, daemon, {"write_bw", "-s", std::to_string(size), "-n", std::to_string(n), "-t", "16"});
    const double gbs = bw["results"][0]["bw_average_mb_s"].get<double>() * (1 << 20) / 1e9;
    std::printf(" %-12s %-8u %-12llu %-14s %-14s %-8.2f\n", "write_bw", size,
                static_cast<unsigned long long>(n),
                (std::to_string(gbs).substr(0, 6) + " GB/s").c_str(),
                (std::to_string(readv_gbs).substr(0, 6) + " GB/s").c_str(), gbs / readv_gbs);
    std::fflush(stdout);
  }

  const nlohmann::json rate = RunPair(
      dir, daemon, {"send_bw", "-s", "8", "-n", std::to_string(o.rate_messages), "-t", "128"});
  const double mpps = rate["results"][0]["msg_rate_mpps"].get<double>();
  std::printf(" %-12s %-8u %-12u %-14s %-14s %-8.2f\n", "send_rate", 8u, o.rate_messages,
              (std::to_string(mpps).substr(0, 6) + " Mpps").c_str(), "goal 5 Mpps", mpps / 5.0);
  std::printf(
      "%s\n floors: shm spin ping-pong one-way (t_typical), process_vm_readv at 1 MiB; "
      "ratio = softib / floor\n%s\n",
      rule, rule);
}

}  // namespace
