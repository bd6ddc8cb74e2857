// softib_bench_floors: what two processes on this machine can do without softib, the floors
// the data path is measured against (issue 19). Latency rows are one-way (round trip / 2,
// microseconds), 8-byte messages, the two processes unpinned (the scheduler places them):
//   futex-pingpong    each way a word in shared memory and a FUTEX_WAKE; the waiter sleeps
//                     in FUTEX_WAIT at once (no spinning): one wake-up per hop
//   eventfd-pingpong  each way an eventfd: write(2) wakes the peer blocked in read(2)
//   udp-loopback      each way an 8-byte datagram on 127.0.0.1, blocking recv(2)
// and one rate row:
//   spsc-ring         a single-producer single-consumer ring of 8-byte slots in shared
//                     memory (4096 slots): the producer writes slots and publishes its index
//                     per batch of 16, the consumer reads them and publishes its index per
//                     batch; both poll with pause (sched_yield after 4096 idle polls, so
//                     two processes on one CPU still progress). Messages per second.
// The copy floors (memcpy, process_vm_readv, process_vm_writev at 1 MiB and other sizes)
// are softib_bench_copy's; the spin and sched_yield hand-over floors are softib_bench_ring's.
// Rows run interleaved in rounds, fresh processes for every slice; no timing is asserted.
#include <linux/futex.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tied_child.h"

namespace {

using softib::bench::CpuRelax;
using softib::bench::NowNs;
using softib::bench::Summarize;
using softib::bench::Summary;

constexpr const char* kProgram = "softib_bench_floors";
constexpr int kRounds = 5;
constexpr uint32_t kSpscSlots = 4096;
constexpr uint32_t kSpscBatch = 16;
constexpr uint32_t kIdlePollsBeforeYield = 4096;

[[noreturn]] void Die(const std::string& what) { softib::bench::Die(kProgram, what); }

struct Options {
  uint32_t iterations = 20000;
  uint32_t messages = 2000000;
  bool csv = false;
  std::string only;  // run only rows whose name contains this
};

// The shared page(s) of one slice: the ping-pong words, the ring and the initiator's samples.
struct alignas(64) Shared {
  alignas(64) std::atomic<uint32_t> ping{0};
  alignas(64) std::atomic<uint32_t> pong{0};
  alignas(64) std::atomic<uint32_t> ready{0};
  alignas(64) std::atomic<uint64_t> head{0};  // spsc: slots written
  alignas(64) std::atomic<uint64_t> tail{0};  // spsc: slots read
  alignas(64) uint64_t slots[kSpscSlots] = {};
  alignas(64) double rate_mps = 0;
  uint64_t errors = 0;
  // The initiator's samples follow the structure (sized at mmap; sizeof is a multiple of 64).
  double* samples() { return reinterpret_cast<double*>(this + 1); }
};

struct Slice {
  Shared* shared = nullptr;
  size_t bytes = 0;
  explicit Slice(uint32_t samples) {
    bytes = sizeof(Shared) + (static_cast<size_t>(samples) + 1) * sizeof(double);
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) Die("mmap");
    shared = new (m) Shared();
  }
  ~Slice() { munmap(shared, bytes); }
  Slice(const Slice&) = delete;
  Slice& operator=(const Slice&) = delete;
};

// Both processes of a slice start together (neither measures the other's start-up).
void Rendezvous(Shared* s) {
  s->ready.fetch_add(1);
  while (s->ready.load() < 2) sched_yield();
}

template <typename Body>
pid_t Fork(Body body) {
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    softib::test_support::DieWithParent(parent);  // never outlive the benchmark
    body();
    _exit(0);
  }
  return pid;
}

bool WaitBoth(pid_t a, pid_t b) {
  bool ok = true;
  for (pid_t pid : {a, b}) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "%s: a process of the slice failed (status %d)\n", kProgram, status);
      ok = false;
      kill(a, SIGKILL);
      kill(b, SIGKILL);
    }
  }
  return ok;
}

// A ping-pong transport: Send(i) carries i to the peer, Receive() blocks until it has the
// next value. The initiator's round trips are its samples.
struct Transport {
  std::function<void(bool initiator, uint32_t value)> send;
  std::function<uint32_t(bool initiator)> receive;
};

bool RunPingPong(Slice& slice, uint32_t iterations, const Transport& t) {
  Shared* s = slice.shared;
  pid_t echo = Fork([&] {
    Rendezvous(s);
    for (uint32_t i = 1; i <= iterations; ++i) {
      uint32_t v = t.receive(false);
      if (v != i) _exit(3);
      t.send(false, v);
    }
  });
  pid_t initiator = Fork([&] {
    Rendezvous(s);
    for (uint32_t i = 1; i <= iterations; ++i) {
      uint64_t start = NowNs();
      t.send(true, i);
      if (t.receive(true) != i) _exit(3);
      s->samples()[i - 1] = static_cast<double>(NowNs() - start) / 2000.0;
    }
  });
  return WaitBoth(echo, initiator);
}

// ---- futex: a word each way, the waiter sleeps at once ----------------------------------

long Futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

bool RunFutex(Slice& slice, uint32_t iterations) {
  Shared* s = slice.shared;
  // The initiator sends on ping and receives on pong, the echo the other way round; both
  // words count 1, 2, ... so the receiver knows the value it waits for.
  uint32_t received[2] = {0, 0};  // per process (after fork)
  Transport t{[s](bool initiator, uint32_t v) {
                std::atomic<uint32_t>* w = initiator ? &s->ping : &s->pong;
                w->store(v, std::memory_order_release);
                Futex(w, FUTEX_WAKE, 1);
              },
              [&](bool initiator) {
                std::atomic<uint32_t>* w = initiator ? &s->pong : &s->ping;
                const uint32_t expected = ++received[initiator ? 1 : 0];
                uint32_t now;
                while ((now = w->load(std::memory_order_acquire)) != expected) {
                  if (Futex(w, FUTEX_WAIT, now) != 0 && errno != EAGAIN && errno != EINTR) {
                    _exit(4);
                  }
                }
                return now;
              }};
  return RunPingPong(slice, iterations, t);
}

// ---- eventfd: one each way -----------------------------------------------------------

bool RunEventfd(Slice& slice, uint32_t iterations) {
  int to_echo = eventfd(0, EFD_CLOEXEC);
  int to_initiator = eventfd(0, EFD_CLOEXEC);
  if (to_echo < 0 || to_initiator < 0) Die("eventfd");
  uint32_t counter[2] = {0, 0};  // per process (after fork): values received so far
  Transport t{[&](bool initiator, uint32_t) {
                uint64_t one = 1;
                if (write(initiator ? to_echo : to_initiator, &one, 8) != 8) _exit(4);
              },
              [&](bool initiator) {
                uint64_t n = 0;
                if (read(initiator ? to_initiator : to_echo, &n, 8) != 8 || n != 1) _exit(4);
                return ++counter[initiator ? 1 : 0];
              }};
  bool ok = RunPingPong(slice, iterations, t);
  close(to_echo);
  close(to_initiator);
  return ok;
}

// ---- UDP on loopback: two bound, connected sockets ------------------------------------

bool RunUdp(Slice& slice, uint32_t iterations) {
  int fds[2];
  sockaddr_in addr[2];
  for (int i = 0; i < 2; ++i) {
    fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fds[i] < 0) Die("socket");
    addr[i] = {};
    addr[i].sin_family = AF_INET;
    addr[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr[i]);
    if (bind(fds[i], reinterpret_cast<sockaddr*>(&addr[i]), len) != 0 ||
        getsockname(fds[i], reinterpret_cast<sockaddr*>(&addr[i]), &len) != 0) {
      Die("bind: " + std::string(std::strerror(errno)));
    }
  }
  for (int i = 0; i < 2; ++i) {
    if (connect(fds[i], reinterpret_cast<sockaddr*>(&addr[1 - i]), sizeof(addr[0])) != 0) {
      Die("connect: " + std::string(std::strerror(errno)));
    }
  }
  // fds[0] is the initiator's, fds[1] the echo's; an 8-byte datagram carries the value.
  Transport t{[&](bool initiator, uint32_t v) {
                uint64_t msg = v;
                if (send(fds[initiator ? 0 : 1], &msg, 8, 0) != 8) _exit(4);
              },
              [&](bool initiator) {
                uint64_t msg = 0;
                if (recv(fds[initiator ? 0 : 1], &msg, 8, 0) != 8) _exit(4);
                return static_cast<uint32_t>(msg);
              }};
  bool ok = RunPingPong(slice, iterations, t);
  close(fds[0]);
  close(fds[1]);
  return ok;
}

// ---- SPSC ring: message rate -----------------------------------------------------------

void IdlePoll(uint32_t* idle) {
  if (++*idle % kIdlePollsBeforeYield == 0) {
    sched_yield();
  } else {
    CpuRelax();
  }
}

bool RunSpsc(Slice& slice, uint32_t messages) {
  Shared* s = slice.shared;
  pid_t consumer = Fork([&] {
    Rendezvous(s);
    uint64_t read = 0, first_ns = 0, expect_sum = 0, sum = 0;
    uint32_t idle = 0;
    while (read < messages) {
      uint64_t head = s->head.load(std::memory_order_acquire);
      if (head == read) {
        IdlePoll(&idle);
        continue;
      }
      if (read == 0) first_ns = NowNs();
      for (; read < head; ++read) {
        sum += s->slots[read % kSpscSlots];
        expect_sum += read;
      }
      s->tail.store(read, std::memory_order_release);
    }
    s->rate_mps =
        static_cast<double>(messages - 1) / (static_cast<double>(NowNs() - first_ns) / 1e9) / 1e6;
    if (sum != expect_sum) s->errors++;
  });
  pid_t producer = Fork([&] {
    Rendezvous(s);
    uint64_t written = 0, tail = 0;
    uint32_t idle = 0;
    while (written < messages) {
      uint64_t n = std::min<uint64_t>(kSpscBatch, messages - written);
      if (written + n - tail > kSpscSlots) {
        tail = s->tail.load(std::memory_order_acquire);
        if (written + n - tail > kSpscSlots) {
          IdlePoll(&idle);
          continue;
        }
      }
      for (uint64_t i = 0; i < n; ++i) s->slots[(written + i) % kSpscSlots] = written + i;
      written += n;
      s->head.store(written, std::memory_order_release);
    }
  });
  return WaitBoth(consumer, producer);
}

// ---- rows ------------------------------------------------------------------------------

struct Row {
  std::string name;
  std::function<bool(Slice&, uint32_t)> run;
  bool is_rate = false;
  std::vector<double> samples;  // latency: one-way µs; rate: M msg/s per slice
};

std::string LoadAverage() {
  char text[64] = "?";
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%63s", text) != 1) std::strcpy(text, "?");
    std::fclose(f);
  }
  return text;
}

const char* kUsage =
    "usage: softib_bench_floors [-n ITERS] [-m MESSAGES] [--only NAME] [--csv]\n"
    "  -n, --iters N      round trips per latency row (default 20000, over 5 rounds)\n"
    "  -m, --messages N   messages per spsc-ring slice (default 2000000)\n"
    "  --only NAME        only rows whose name contains NAME\n"
    "  --csv              comma-separated rows instead of the table\n"
    "Rows: futex-pingpong, eventfd-pingpong, udp-loopback (one-way latency, two processes,\n"
    "each sleeping in the kernel until woken), spsc-ring (messages per second through a\n"
    "shared-memory ring between two polling processes).\n";

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) Die(arg + " needs a value");
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v <= 0) Die("bad value for " + arg);
      return v;
    };
    if (arg == "-n" || arg == "--iters") {
      o->iterations = static_cast<uint32_t>(std::max(static_cast<long>(kRounds), value()));
    } else if (arg == "-m" || arg == "--messages") {
      o->messages = static_cast<uint32_t>(std::max(2L, value()));
    } else if (arg == "--only") {
      if (i + 1 >= argc) Die("--only needs a value");
      o->only = argv[++i];
    } else if (arg == "--csv") {
      o->csv = true;
    } else {
      std::fputs(kUsage, stdout);
      return arg == "-h" || arg == "--help";
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) return 2;
  std::vector<Row> rows;
  rows.push_back({"futex-pingpong", RunFutex, false, {}});
  rows.push_back({"eventfd-pingpong", RunEventfd, false, {}});
  rows.push_back({"udp-loopback", RunUdp, false, {}});
  rows.push_back({"spsc-ring", RunSpsc, true, {}});
  std::erase_if(rows, [&](const Row& r) { return r.name.find(o.only) == std::string::npos; });
  if (rows.empty()) Die("--only " + o.only + ": no such row");

  const uint32_t per_round = o.iterations / kRounds;
  const uint32_t messages = std::max<uint32_t>(2, o.messages / kRounds);
  for (int round = 0; round < kRounds; ++round) {
    for (Row& row : rows) {
      Slice slice(row.is_rate ? 0 : per_round);
      if (!row.run(slice, row.is_rate ? messages : per_round)) Die(row.name + ": a process failed");
      if (slice.shared->errors != 0) Die(row.name + ": data check failed");
      if (row.is_rate) {
        row.samples.push_back(slice.shared->rate_mps);
      } else {
        row.samples.insert(row.samples.end(), slice.shared->samples(),
                           slice.shared->samples() + per_round);
      }
    }
  }

  const char* line =
      "--------------------------------------------------------------------------------------";
  if (o.csv) {
    std::printf(
        "test,bytes,count,t_min_us,t_typical_us,t_avg_us,t_p99_us,t_max_us,"
        "mmsg_per_s_median,mmsg_per_s_best\n");
  } else {
    std::printf("%s\n", line);
    std::printf("      softib floors: two processes without softib (%ld CPUs online, load %s)\n",
                sysconf(_SC_NPROCESSORS_ONLN), LoadAverage().c_str());
    std::printf(" Latency: one way = round trip / 2, microseconds, %d interleaved rounds\n",
                kRounds);
    std::printf("%s\n", line);
  }
  bool header = false;
  for (const Row& row : rows) {
    if (row.is_rate) continue;
    if (!header && !o.csv) {
      std::printf(" %-18s %-6s %-11s %-11s %-15s %-11s %-11s %-11s\n", "test", "#bytes",
                  "#iterations", "t_min[usec]", "t_typical[usec]", "t_avg[usec]", "t_p99[usec]",
                  "t_max[usec]");
    }
    header = true;
    Summary s = Summarize(row.samples);
    std::printf(o.csv ? "%s,8,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,,\n"
                      : " %-18s 8      %-11zu %-11.3f %-15.3f %-11.3f %-11.3f %-11.3f\n",
                row.name.c_str(), row.samples.size(), s.min, s.typical, s.avg, s.p99, s.max);
  }
  header = false;
  for (const Row& row : rows) {
    if (!row.is_rate) continue;
    if (!header && !o.csv) {
      std::printf("%s\n", line);
      std::printf(" %-18s %-6s %-11s %-15s %-15s\n", "test", "#bytes", "#messages", "MMsg/s median",
                  "MMsg/s best");
    }
    header = true;
    Summary s = Summarize(row.samples);
    std::printf(o.csv ? "%s,8,%u,,,,,,%.3f,%.3f\n" : " %-18s 8      %-11u %-15.3f %-15.3f\n",
                row.name.c_str(), messages * kRounds, s.typical, s.max);
  }
  if (!o.csv) std::printf("%s\n", line);
  return 0;
}
