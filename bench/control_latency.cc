// softib_bench_control: latency of the control path (a null IOCTL through the user<->kernel
// channel) against its floor, a raw AF_UNIX SOCK_SEQPACKET round trip of the same datagram
// sizes, all measured in one run. Output in the spirit of perftest's ib_send_lat.
//
// Rows:
//   floor-threads    raw socketpair ping-pong, echo thread in this process
//   floor-processes  raw socketpair ping-pong, echo in a forked child
//   channel-threads  DeviceIoControl -> Server (loop thread in this process) -> echo sink
//   channel-procs    DeviceIoControl -> Server in a forked child -> echo sink
// The echo sink completes inside Submit, so a channel round trip is pure channel cost.
// The floor's datagrams are header + payload long, exactly the channel's frames.
//
// How the two CPUs are shared: nothing is pinned and nobody spins. In every ping-pong only one
// side is runnable at a time (the other sleeps in recvmsg, or the server in epoll_wait), so a
// round trip is two wake-ups in the floor: the echo side's and the caller's. The channel
// needs the same two when the caller receives its own answer (runtime/user: a synchronous
// caller that finds nobody receiving reads the socket itself); the client's background
// receiver thread then stays asleep. The scheduler puts the woken side on whichever CPU is
// idle; other load on the machine hits every row alike because the rows run interleaved in
// rounds, so the ratios hold better than the absolute figures.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "softib/channel/protocol.h"
#include "softib/channel/server.h"
#include "softib/user/device_io.h"
#include "tied_child.h"

namespace {

using softib::abi::Status;
namespace channel = softib::channel;
namespace user = softib::user;

constexpr uint32_t kNullIoctl = 0x1;  // the echo sink answers any code alike
constexpr int kRounds = 5;            // each row runs in this many interleaved slices

struct Options {
  uint32_t iterations = 20000;
  uint32_t size = 16;  // IOCTL input = output bytes
  bool json = false;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "softib_bench_control: %s\n", what.c_str());
  std::exit(1);
}

bool ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) Die(arg + " needs a value");
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 0) Die("bad value for " + arg);
      return v;
    };
    if (arg == "--iters" || arg == "-n") {
      options->iterations = static_cast<uint32_t>(std::max(1L, value()));
    } else if (arg == "--size" || arg == "-s") {
      long size = value();
      if (size > static_cast<long>(channel::kMaxInputBytes)) Die("--size over the IOCTL limit");
      options->size = static_cast<uint32_t>(size);
    } else if (arg == "--json") {
      options->json = true;
    } else {
      std::printf(
          "usage: softib_bench_control [--iters N] [--size BYTES] [--json]\n"
          "  --iters N     round trips per row (default 20000)\n"
          "  --size BYTES  IOCTL input and output bytes (default 16, max %u)\n"
          "  --json        one JSON object instead of the table\n",
          channel::kMaxInputBytes);
      return arg == "--help" || arg == "-h";
    }
  }
  return true;
}

// Echoes every datagram until the peer hangs up.
void EchoLoop(int fd) {
  std::vector<uint8_t> buffer(channel::kMaxRequestFrameBytes);
  for (;;) {
    ssize_t r = recv(fd, buffer.data(), buffer.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    if (send(fd, buffer.data(), static_cast<size_t>(r), MSG_NOSIGNAL) < 0) return;
  }
}

class EchoSink : public channel::IoctlSink {
 public:
  void Submit(channel::FileContext& file, channel::PendingRequest request) override {
    file.Complete(request.request_id, Status::SUCCESS, request.input);
  }
  void Cancel(channel::FileContext&, uint64_t) override {}  // never outstanding
  void Close(channel::FileContext&) override {}
};

// One row: a round trip to time, repeated.
struct Row {
  std::string name;
  std::function<void()> round_trip;
  std::vector<double> samples_us;
};

struct Summary {
  double min, typical, avg, p99, max;
};

Summary Summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (double s : samples) sum += s;
  size_t n = samples.size();
  return {samples.front(), samples[n / 2], sum / static_cast<double>(n),
          samples[std::min(n - 1, n * 99 / 100)], samples.back()};
}

void Time(Row& row, uint32_t iterations) {
  for (uint32_t i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    row.round_trip();
    auto end = std::chrono::steady_clock::now();
    row.samples_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
}

// Raw SEQPACKET round trip: one frame-sized datagram each way.
std::function<void()> RawRoundTrip(int fd, uint32_t frame_bytes) {
  auto buffer = std::make_shared<std::vector<uint8_t>>(frame_bytes, 0x5a);
  return [fd, buffer] {
    if (send(fd, buffer->data(), buffer->size(), MSG_NOSIGNAL) < 0) Die("floor send failed");
    if (recv(fd, buffer->data(), buffer->size(), 0) <= 0) Die("floor recv failed");
  };
}

std::function<void()> IoctlRoundTrip(user::DeviceHandle device, uint32_t size) {
  auto in = std::make_shared<std::vector<uint8_t>>(size, 0xa5);
  auto out = std::make_shared<std::vector<uint8_t>>(size);
  return [device, size, in, out] {
    uint32_t returned = 0;
    Status s = user::DeviceIoControl(device, kNullIoctl, in->data(), size, out->data(), size,
                                     &returned, nullptr);
    if (s != Status::SUCCESS || returned != size) Die("null IOCTL failed");
  };
}

// A forked child serving the channel; it stops when `stop_fd` (a pipe) closes.
[[noreturn]] void ServeChannelChild(const std::string& run_dir, int ready_fd, int stop_fd) {
  EchoSink sink;
  channel::Server server(&sink);
  std::string error;
  if (!server.Start(run_dir, "bench", &error)) {
    std::fprintf(stderr, "softib_bench_control: server: %s\n", error.c_str());
    _exit(1);
  }
  char byte = 1;
  if (write(ready_fd, &byte, 1) != 1) _exit(1);
  while (read(stop_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  server.Stop();
  _exit(0);
}

user::DeviceHandle Open(const std::string& path) {
  user::DeviceHandle device = nullptr;
  if (user::OpenDevice(path.c_str(), &device) != Status::SUCCESS) Die("cannot open " + path);
  return device;
}

void PrintTable(const Options& options, std::vector<Row>& rows, double ratio_procs,
                double ratio_threads) {
  const char* line =
      "---------------------------------------------------------------------------------------"
      "-------";
  std::printf("%s\n", line);
  std::printf("                    softib control path: null IOCTL round trip\n");
  std::printf(" Transport       : AF_UNIX SOCK_SEQPACKET, %zu-byte frame header\n",
              sizeof(channel::RequestHeader));
  std::printf(" IOCTL in/out    : %u bytes (floor datagrams: %zu bytes each way)\n", options.size,
              sizeof(channel::RequestHeader) + options.size);
  std::printf(" Iterations      : %u per row, interleaved in %d rounds\n", options.iterations,
              kRounds);
  std::printf(" CPUs online     : %ld (nothing pinned, nobody spins)\n",
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("%s\n", line);
  std::printf(" %-16s %-7s %-11s %-11s %-15s %-11s %-11s %-11s\n", "test", "#bytes", "#iterations",
              "t_min[usec]", "t_typical[usec]", "t_avg[usec]", "t_p99[usec]", "t_max[usec]");
  for (Row& row : rows) {
    Summary s = Summarize(row.samples_us);
    std::printf(" %-16s %-7u %-11zu %-11.2f %-15.2f %-11.2f %-11.2f %-11.2f\n", row.name.c_str(),
                options.size, row.samples_us.size(), s.min, s.typical, s.avg, s.p99, s.max);
  }
  std::printf("%s\n", line);
  std::printf(" ratio channel/floor (t_typical): processes %.2f, threads %.2f\n", ratio_procs,
              ratio_threads);
  std::printf("%s\n", line);
}

void PrintJson(const Options& options, std::vector<Row>& rows, double ratio_procs,
               double ratio_threads) {
  std::printf("{\"benchmark\":\"control\",\"bytes\":%u,\"iterations\":%u,\"rows\":[", options.size,
              options.iterations);
  for (size_t i = 0; i < rows.size(); ++i) {
    Summary s = Summarize(rows[i].samples_us);
    std::printf(
        "%s{\"test\":\"%s\",\"t_min_us\":%.3f,\"t_typical_us\":%.3f,\"t_avg_us\":%.3f,"
        "\"t_p99_us\":%.3f,\"t_max_us\":%.3f}",
        i ? "," : "", rows[i].name.c_str(), s.min, s.typical, s.avg, s.p99, s.max);
  }
  std::printf("],\"ratio_processes\":%.3f,\"ratio_threads\":%.3f}\n", ratio_procs, ratio_threads);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, &options)) return 2;
  const uint32_t frame_bytes = static_cast<uint32_t>(sizeof(channel::RequestHeader)) + options.size;

  // Children first, while this process has no threads (fork copies only the caller).
  int floor_pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, floor_pair) != 0) Die("socketpair");
  const pid_t parent = getpid();
  pid_t floor_child = fork();
  if (floor_child < 0) Die("fork");
  if (floor_child == 0) {
    softib::test_support::DieWithParent(parent);  // never outlives the benchmark
    close(floor_pair[0]);
    EchoLoop(floor_pair[1]);
    _exit(0);
  }
  close(floor_pair[1]);

  char dir_template[] = "/tmp/softib-bench-XXXXXX";
  if (!mkdtemp(dir_template)) Die("mkdtemp");
  const std::string run_dir = dir_template;
  int ready_pipe[2], stop_pipe[2];
  if (pipe2(ready_pipe, O_CLOEXEC) != 0 || pipe2(stop_pipe, O_CLOEXEC) != 0) Die("pipe");
  pid_t server_child = fork();
  if (server_child < 0) Die("fork");
  if (server_child == 0) {
    softib::test_support::DieWithParent(parent);
    close(floor_pair[0]);
    close(ready_pipe[0]);
    close(stop_pipe[1]);
    ServeChannelChild(run_dir, ready_pipe[1], stop_pipe[0]);
  }
  close(ready_pipe[1]);
  close(stop_pipe[0]);
  char byte;
  if (read(ready_pipe[0], &byte, 1) != 1) Die("the channel server child failed to start");
  close(ready_pipe[0]);
  user::DeviceHandle remote = Open(run_dir + "/bench");

  int thread_pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, thread_pair) != 0) Die("socketpair");
  std::thread echo_thread(EchoLoop, thread_pair[1]);

  EchoSink local_sink;
  channel::Server local_server(&local_sink);
  std::string error;
  if (!local_server.Start(run_dir, "local", &error)) Die("server: " + error);
  user::DeviceHandle local = Open(run_dir + "/local");

  std::vector<Row> rows;
  rows.push_back({"floor-threads", RawRoundTrip(thread_pair[0], frame_bytes), {}});
  rows.push_back({"floor-processes", RawRoundTrip(floor_pair[0], frame_bytes), {}});
  rows.push_back({"channel-threads", IoctlRoundTrip(local, options.size), {}});
  rows.push_back({"channel-procs", IoctlRoundTrip(remote, options.size), {}});

  uint32_t warmup = std::max<uint32_t>(10, std::min<uint32_t>(1000, options.iterations / 10));
  for (Row& row : rows) {
    for (uint32_t i = 0; i < warmup; ++i) row.round_trip();
    row.samples_us.reserve(options.iterations);
  }
  for (int round = 0; round < kRounds; ++round) {
    uint32_t slice = options.iterations / kRounds +
                     (round < static_cast<int>(options.iterations % kRounds) ? 1 : 0);
    for (Row& row : rows) Time(row, slice);
  }

  user::CloseDevice(local);
  local_server.Stop();
  user::CloseDevice(remote);
  close(stop_pipe[1]);
  shutdown(thread_pair[0], SHUT_RDWR);
  echo_thread.join();
  close(thread_pair[0]);
  close(thread_pair[1]);
  close(floor_pair[0]);
  int status = 0;
  bool children_ok = true;
  for (pid_t child : {floor_child, server_child}) {
    children_ok &=
        waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  rmdir(run_dir.c_str());
  if (!children_ok) Die("a child process failed");

  auto typical = [&](size_t i) { return Summarize(rows[i].samples_us).typical; };
  double ratio_procs = typical(3) / typical(1);
  double ratio_threads = typical(2) / typical(0);
  if (options.json) {
    PrintJson(options, rows, ratio_procs, ratio_threads);
  } else {
    PrintTable(options, rows, ratio_procs, ratio_threads);
  }
  return 0;
}
