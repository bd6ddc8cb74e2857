// softib_bench_ring: the speed path's shape, measured against its floor in the same run.
// Output in the spirit of perftest's ib_send_lat (one-way latency = round trip / 2) and a
// message-rate table in the spirit of ib_send_bw -a's msg rate.
//
// Rows (fresh processes for every slice; rows run interleaved in rounds):
//   shm-spin          floor: two processes ping-pong one word each way on shared cache
//                     lines, spinning (the best two processes can do through memory)
//   ring-<policy>     process A posts an 8-byte inline SEND on its send ring; an "HCA"
//                     process pops it, takes a receive from B's receive ring, (with -dma
//                     rows: writes the 8 bytes into B's buffer with process_vm_writev),
//                     and pushes a completion on B's CQ; B polls it, reposts the receive and
//                     answers the same way. Three processes, two CPUs: the policy says who
//                     spins, yields or sleeps, and who is pinned where (see --help, README).
//   rate-<policy>     A posts 8-byte sends back to back (batches), the HCA relays, B polls
//                     and reposts receives in batches: messages per second at B.
//
// The HCA and the pollers use hca/rings and hca/uvp exactly as the real path will; only
// the transport inside the HCA (packets, reliability) is missing.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "bench_util.h"
#include "softib/rings/entry_checks.h"
#include "softib/rings/ring.h"
#include "softib/rings/shared_memory.h"
#include "softib/uvp/uvp.h"
#include "tied_child.h"

namespace {

namespace abi = softib::abi;
namespace rings = softib::rings;
namespace uvp = softib::uvp;
using softib::bench::CpuRelax;
using softib::bench::NowNs;
using softib::bench::PinToCpu;
using softib::bench::Summarize;
using softib::bench::Summary;

constexpr const char* kProgram = "softib_bench_ring";
constexpr int kRounds = 5;
constexpr uint32_t kRingEntries = 256;
constexpr uint32_t kBatch = 16;
constexpr int64_t kIdleSleepNs = 10'000'000;  // sleeps re-check the stop flag this often

[[noreturn]] void Die(const std::string& what) { softib::bench::Die(kProgram, what); }

// spin: poll with pause, never sleep; yield: poll with sched_yield, never sleep; futex:
// poll for 2 us, then sleep on the doorbell; adaptive: poll for 50 us (the HCA with pause,
// a user process with sched_yield), then sleep on the doorbell.
enum class Wait { kSpin, kYield, kFutex, kAdaptive };

uint64_t SpinBudgetNs(Wait w) {
  switch (w) {
    case Wait::kFutex:
      return 2000;
    case Wait::kAdaptive:
      return 50000;
    default:
      return UINT64_MAX;
  }
}

struct Policy {
  const char* name;
  Wait hca;
  Wait poll;
  int hca_cpu;  // -1: not pinned
  int a_cpu;
  int b_cpu;
  bool dma;
  // A's sends arrive on A's own receive queue: two actors, each with a CPU. A's round trip
  // A -> HCA -> A is then the one-way path A -> HCA -> B of a machine with a CPU per actor.
  bool loopback = false;
};

struct Options {
  uint32_t iterations = 20000;
  uint32_t messages = 400000;
  uint32_t size = 8;
  bool csv = false;
  bool rate = true;
  std::string only;  // run only rows whose name contains this
};

// The shared area of one slice: rings of both QPs, flags and A's samples.
struct alignas(64) Flags {
  alignas(64) std::atomic<uint32_t> ping{0};
  alignas(64) std::atomic<uint32_t> pong{0};
  alignas(64) std::atomic<uint32_t> stop{0};
  alignas(64) std::atomic<uint32_t> ready{0};
  std::atomic<int32_t> pid_a{0};
  std::atomic<int32_t> pid_b{0};
  alignas(64) uint64_t errors = 0;
  uint64_t rate_target = 0;
  double rate_mps = 0;
};

struct Side {
  abi::RingMapping send, recv, cq;
};

struct Slice {
  rings::SharedMemory shm;
  Side side[2];
  uint64_t flags_offset = 0, samples_offset = 0;
  Flags* flags() { return reinterpret_cast<Flags*>(static_cast<char*>(shm.base()) + flags_offset); }
  double* samples() {
    return reinterpret_cast<double*>(static_cast<char*>(shm.base()) + samples_offset);
  }
};

void MakeSlice(Slice* s, uint32_t samples) {
  rings::RegionLayout layout;
  for (Side& side : s->side) {
    if (!layout.Add(rings::RingKind::SEND, kRingEntries, &side.send) ||
        !layout.Add(rings::RingKind::RECV, kRingEntries, &side.recv) ||
        !layout.Add(rings::RingKind::CQ, kRingEntries * 2, &side.cq)) {
      Die("ring layout");
    }
  }
  s->flags_offset = layout.size();
  s->samples_offset = s->flags_offset + 4096;
  uint64_t size = s->samples_offset + (static_cast<uint64_t>(samples) + 1) * sizeof(double);
  std::string error;
  if (!rings::SharedMemory::Create("softib-bench", static_cast<size_t>(size), &s->shm, &error)) {
    Die(error);
  }
  for (Side& side : s->side) {
    rings::FormatRing(s->shm.base(), side.send, rings::RingKind::SEND);
    rings::FormatRing(s->shm.base(), side.recv, rings::RingKind::RECV);
    rings::FormatRing(s->shm.base(), side.cq, rings::RingKind::CQ);
  }
  new (s->flags()) Flags();
}

void Idle(Wait wait) {
  if (wait == Wait::kSpin) {
    CpuRelax();
  } else {
    sched_yield();
  }
}

// ---------------------------------------------------------------- the HCA process

template <typename Entry>
rings::RingConsumer<Entry> HcaConsumer(Slice& s, const abi::RingMapping& m) {
  return {rings::ControlAt(s.shm.base(), m), rings::EntriesAt<Entry>(s.shm.base(), m),
          m.num_entries, rings::Side::kHca};
}

[[noreturn]] void HcaProcess(Slice& s, const Policy& p) {
  PinToCpu(p.hca_cpu);
  Flags* f = s.flags();
  rings::RingConsumer<abi::SendWorkRequest> sq[2];
  rings::RingConsumer<abi::RecvWorkRequest> rq[2];
  rings::CqProducer cq[2];
  rings::RingControl* doorbells[2];
  for (int x = 0; x < 2; ++x) {
    sq[x] = HcaConsumer<abi::SendWorkRequest>(s, s.side[x].send);
    rq[x] = HcaConsumer<abi::RecvWorkRequest>(s, s.side[x].recv);
    cq[x] = {rings::ControlAt(s.shm.base(), s.side[x].cq),
             rings::EntriesAt<abi::WorkCompletion>(s.shm.base(), s.side[x].cq),
             s.side[x].cq.num_entries};
    doorbells[x] = rings::ControlAt(s.shm.base(), s.side[x].send);
  }
  while (f->pid_a.load() == 0 || f->pid_b.load() == 0) sched_yield();
  pid_t pids[2] = {f->pid_a.load(), f->pid_b.load()};
  f->ready.fetch_add(p.loopback ? 2 : 1);
  uint64_t idle_since = 0;
  while (!f->stop.load(std::memory_order_relaxed)) {
    bool worked = false;
    bool pushed[2] = {false, false};
    // Up to a batch per queue per pass; rings are released and CQs published once per batch.
    for (uint32_t k = 0; k < 2 * kBatch; ++k) {
      int x = static_cast<int>(k & 1);
      abi::SendWorkRequest wr;
      if (sq[x].Pop(&wr, /*defer_release=*/true) != rings::PopResult::kEntry) continue;
      worked = true;
      int y = p.loopback ? x : 1 - x;
      abi::RecvWorkRequest rwr;
      rings::PopResult r;
      while ((r = rq[y].Pop(&rwr, true)) == rings::PopResult::kEmpty) {  // RNR: wait
        for (int z = 0; z < 2; ++z) {  // hand back what was taken before waiting
          sq[z].Release();
          rq[z].Release();
          if (pushed[z]) cq[z].Publish();
          pushed[z] = false;
        }
        if (f->stop.load(std::memory_order_relaxed)) _exit(0);
        Idle(p.hca == Wait::kSpin ? Wait::kSpin : Wait::kYield);
      }
      if (r == rings::PopResult::kError ||
          rings::CheckSendWorkRequest(wr) != abi::Status::SUCCESS) {
        f->errors++;
        _exit(3);
      }
      if (p.dma) {
        iovec local{&wr.sge[0], wr.inline_length};
        iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(rwr.sge[0].vaddr)),
                     wr.inline_length};
        if (process_vm_writev(pids[y], &local, 1, &remote, 1, 0) !=
            static_cast<ssize_t>(wr.inline_length)) {
          _exit(4);
        }
      }
      abi::WorkCompletion wc{};
      wc.wr_id = rwr.wr_id;
      wc.opcode = abi::WcOpcode::RECV;
      wc.length = wr.inline_length;
      wc.qp_num = static_cast<uint32_t>(y + 1);
      bool notify = false;
      if (cq[y].Push(wc, true, &notify, /*publish=*/false) !=
          rings::CqProducer::PushResult::kPushed) {
        _exit(5);
      }
      pushed[y] = true;
    }
    for (int z = 0; z < 2; ++z) {
      sq[z].Release();
      rq[z].Release();
      if (pushed[z]) cq[z].Publish();
    }
    if (worked) {
      idle_since = 0;
      continue;
    }
    if (idle_since == 0) idle_since = NowNs();
    if (NowNs() - idle_since > SpinBudgetNs(p.hca)) {
      rings::SleepUntilAnyRung(
          std::span<rings::RingControl* const>(doorbells),
          [&](size_t i) { return sq[i].Available() != 0; }, kIdleSleepNs);
      idle_since = 0;
    } else {
      Idle(p.hca == Wait::kYield ? Wait::kYield : Wait::kSpin);
    }
  }
  _exit(0);
}

// ---------------------------------------------------------------- the two user processes

struct User {
  uvp::QueuePair qp;
  uvp::CompletionQueue cq;
  alignas(64) uint64_t recv_buffer[kRingEntries] = {};
  uvp::WaitPolicy wait;

  void Attach(Slice& s, const Side& side, Wait w) {
    if (qp.Attach(s.shm.base(), s.shm.size(), side.send, side.recv) != abi::Status::SUCCESS ||
        cq.Attach(s.shm.base(), s.shm.size(), side.cq) != abi::Status::SUCCESS) {
      _exit(6);
    }
    bool sleeps = w == Wait::kFutex || w == Wait::kAdaptive;
    wait.yield_while_spinning = w == Wait::kYield || w == Wait::kAdaptive;
    wait.spin_ns = sleeps ? static_cast<uint32_t>(SpinBudgetNs(w)) : 1000000;
    wait.sleep_timeout_ns = sleeps ? kIdleSleepNs : 0;
  }
  void PostRecvs(uint32_t first, uint32_t count) {
    abi::RecvWorkRequest wrs[kBatch];
    for (uint32_t done = 0; done < count;) {
      uint32_t n = std::min(count - done, kBatch);
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t slot = (first + done + i) % kRingEntries;
        wrs[i] = {};
        wrs[i].wr_id = slot;
        wrs[i].num_sge = 1;
        wrs[i].sge[0].vaddr = reinterpret_cast<uintptr_t>(&recv_buffer[slot]);
        wrs[i].sge[0].length = sizeof(uint64_t);
      }
      uint32_t posted = 0;
      if (qp.PostRecv(std::span(wrs, n), &posted) != abi::Status::SUCCESS || posted != n) _exit(7);
      done += n;
    }
  }
  bool PostSend(uint64_t value, uint32_t size) {
    abi::SendWorkRequest wr{};
    wr.wr_id = value;
    wr.wr_type = abi::WrType::SEND;
    wr.send_flags = abi::SendFlags::INLINE | abi::SendFlags::SOLICITED;
    wr.inline_length = size;
    std::memcpy(&wr.sge[0], &value, sizeof(value));
    uint32_t posted = 0;
    abi::Status st = qp.PostSend(std::span(&wr, 1), &posted);
    if (st == abi::Status::INSUFFICIENT_RESOURCES) return false;
    if (st != abi::Status::SUCCESS) _exit(8);
    return true;
  }
  // Waits for one completion, checking `stop` between bounded waits.
  bool Next(abi::WorkCompletion* wc, const std::atomic<uint32_t>& stop) {
    for (;;) {
      uint32_t n = 0;
      abi::Status st = cq.PollCq(std::span(wc, 1), &n);
      if (st == abi::Status::SUCCESS) return true;
      if (st != abi::Status::NOT_FOUND) _exit(9);
      if (stop.load(std::memory_order_relaxed)) return false;
      cq.Wait(wait);
    }
  }
};

[[noreturn]] void PingProcess(Slice& s, const Policy& p, const Options& o, bool initiator) {
  PinToCpu(initiator ? p.a_cpu : p.b_cpu);
  Flags* f = s.flags();
  (initiator ? f->pid_a : f->pid_b).store(getpid());
  if (p.loopback) f->pid_b.store(getpid());
  User u;
  u.Attach(s, s.side[initiator ? 0 : 1], p.poll);
  u.PostRecvs(0, kRingEntries);
  uint32_t reposted = kRingEntries;
  f->ready.fetch_add(1);
  while (f->ready.load() < 3) sched_yield();
  double* samples = s.samples();
  abi::WorkCompletion wc;
  for (uint64_t i = 1;; ++i) {
    uint64_t start = NowNs();
    if (initiator) {
      if (i > o.iterations) break;
      if (!u.PostSend(i, o.size)) _exit(10);
    }
    if (!u.Next(&wc, f->stop)) break;
    if (p.dma && u.recv_buffer[wc.wr_id % kRingEntries] != i) f->errors++;
    u.PostRecvs(reposted++, 1);
    if (initiator) {
      // One way, µs (loopback: the whole round trip, see Policy::loopback).
      samples[i - 1] = static_cast<double>(NowNs() - start) / (p.loopback ? 1000.0 : 2000.0);
    } else if (!u.PostSend(i, o.size)) {
      _exit(10);
    }
  }
  if (initiator) {
    f->stop.store(1);
    // Wake sleepers now rather than at their next timeout.
    for (const Side& side : s.side) {
      rings::FutexWakeAll(&rings::ControlAt(s.shm.base(), side.cq)->doorbell.wake_seq);
      rings::FutexWakeAll(&rings::ControlAt(s.shm.base(), side.send)->doorbell.wake_seq);
    }
  }
  _exit(0);
}

// The receiving side of a rate slice: takes what completed (waiting if `block`), reposts
// that many receives; true once every message arrived (the rate is then in the flags).
bool ReceiveAll(User& u, Flags* f, bool block) {
  static uint64_t received = 0, first_ns = 0;
  static uint32_t reposted = kRingEntries;
  abi::WorkCompletion wcs[kBatch];
  while (received < f->rate_target) {
    uint32_t n = 0;
    abi::Status st = u.cq.PollCq(wcs, &n);
    if (st == abi::Status::NOT_FOUND) {
      if (!block) return false;
      u.cq.Wait(u.wait);
      continue;
    }
    if (st != abi::Status::SUCCESS) _exit(9);
    if (received == 0) first_ns = NowNs();
    received += n;
    u.PostRecvs(reposted, n);
    reposted += n;
  }
  if (f->rate_mps == 0) {
    double seconds = static_cast<double>(NowNs() - first_ns) / 1e9;
    f->rate_mps = static_cast<double>(received - 1) / seconds / 1e6;
  }
  return true;
}

[[noreturn]] void RateProcess(Slice& s, const Policy& p, const Options& o, bool sender) {
  PinToCpu(sender ? p.a_cpu : p.b_cpu);
  Flags* f = s.flags();
  (sender ? f->pid_a : f->pid_b).store(getpid());
  if (p.loopback) f->pid_b.store(getpid());
  User u;
  u.Attach(s, s.side[sender ? 0 : 1], p.poll);
  if (!sender || p.loopback) u.PostRecvs(0, kRingEntries);
  f->rate_target = o.messages;
  f->ready.fetch_add(1);
  while (f->ready.load() < 3) sched_yield();
  if (sender) {
    abi::SendWorkRequest wrs[kBatch] = {};
    for (abi::SendWorkRequest& wr : wrs) {
      wr.wr_type = abi::WrType::SEND;
      wr.send_flags = abi::SendFlags::INLINE;
      wr.inline_length = o.size;
    }
    for (uint64_t sent = 0; sent < o.messages && !f->stop.load(std::memory_order_relaxed);) {
      uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(kBatch, o.messages - sent));
      for (uint32_t i = 0; i < n; ++i) wrs[i].wr_id = sent + i;
      uint32_t posted = 0;
      abi::Status st = u.qp.PostSend(std::span(wrs, n), &posted);
      if (st != abi::Status::SUCCESS && st != abi::Status::INSUFFICIENT_RESOURCES) _exit(8);
      sent += posted;
      if (p.loopback) {
        ReceiveAll(u, f, false);
      } else if (posted == 0) {
        Idle(p.poll == Wait::kSpin ? Wait::kSpin : Wait::kYield);
      }
    }
    if (!p.loopback) _exit(0);
  }
  while (!ReceiveAll(u, f, true)) {
  }
  f->stop.store(1);
  for (const Side& side : s.side) {
    rings::FutexWakeAll(&rings::ControlAt(s.shm.base(), side.send)->doorbell.wake_seq);
  }
  _exit(0);
}

// ---------------------------------------------------------------- the floor

// Floors: one word each way between two processes. spin: both poll with pause (unpinned);
// yield: both on one CPU, polling with sched_yield (the cost of handing a CPU over);
// futex: both sleep on the word and are woken (the cost of a wake-up).
enum class FloorMode { kSpin, kYield, kFutex };

uint32_t* FutexWord(std::atomic<uint32_t>& word) { return reinterpret_cast<uint32_t*>(&word); }

void AwaitValue(std::atomic<uint32_t>& word, uint32_t value, FloorMode mode) {
  uint32_t seen;
  while ((seen = word.load(std::memory_order_acquire)) != value) {
    if (mode == FloorMode::kSpin) {
      CpuRelax();
    } else if (mode == FloorMode::kYield) {
      sched_yield();
    } else {
      rings::FutexWait(FutexWord(word), seen, kIdleSleepNs);
    }
  }
}

void Store(std::atomic<uint32_t>& word, uint32_t value, FloorMode mode) {
  word.store(value, std::memory_order_release);
  if (mode == FloorMode::kFutex) rings::FutexWakeAll(FutexWord(word));
}

[[noreturn]] void FloorProcess(Slice& s, uint32_t iterations, bool initiator, FloorMode mode,
                               int cpu) {
  PinToCpu(cpu);
  Flags* f = s.flags();
  f->ready.fetch_add(1);
  while (f->ready.load() < 2) sched_yield();
  double* samples = s.samples();
  for (uint32_t i = 1; i <= iterations; ++i) {
    if (initiator) {
      uint64_t start = NowNs();
      Store(f->ping, i, mode);
      AwaitValue(f->pong, i, mode);
      samples[i - 1] = static_cast<double>(NowNs() - start) / 2000.0;
    } else {
      AwaitValue(f->ping, i, mode);
      Store(f->pong, i, mode);
    }
  }
  _exit(0);
}

// ---------------------------------------------------------------- rows

struct Row {
  std::string name;
  std::function<bool(Slice&, uint32_t)> run;  // forks the processes of one slice
  bool is_rate = false;
  uint32_t scale = 1;  // iterations divided by this (rows that are slow by design)
  std::vector<double> samples;
  std::vector<double> rates;
};

// Reaps the slice's processes; if one fails, the others (which may wait for it forever)
// are killed.
bool WaitAll(std::vector<pid_t> children) {
  bool ok = true;
  while (!children.empty()) {
    int status = 0;
    pid_t child = wait(&status);
    if (child < 0) return false;
    std::erase(children, child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "%s: a process of the slice failed (status %d)\n", kProgram, status);
      ok = false;
      for (pid_t other : children) kill(other, SIGKILL);
    }
  }
  return ok;
}

template <typename Body>
pid_t Fork(Body body) {
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) Die("fork");
  if (pid == 0) {
    softib::test_support::DieWithParent(parent);  // never outlive the benchmark (a timeout)
    body();
  }
  return pid;
}

bool RunFloor(Slice& s, uint32_t iterations, FloorMode mode, int cpu) {
  std::vector<pid_t> children = {Fork([&] { FloorProcess(s, iterations, false, mode, cpu); }),
                                 Fork([&] { FloorProcess(s, iterations, true, mode, cpu); })};
  return WaitAll(children);
}

bool RunRing(Slice& s, const Policy& p, const Options& o, uint32_t iterations) {
  Options slice = o;
  slice.iterations = iterations;
  std::vector<pid_t> children = {Fork([&] { HcaProcess(s, p); })};
  if (!p.loopback) children.push_back(Fork([&] { PingProcess(s, p, slice, false); }));
  children.push_back(Fork([&] { PingProcess(s, p, slice, true); }));
  return WaitAll(children);
}

bool RunRate(Slice& s, const Policy& p, const Options& o) {
  std::vector<pid_t> children = {Fork([&] { HcaProcess(s, p); })};
  if (!p.loopback) children.push_back(Fork([&] { RateProcess(s, p, o, false); }));
  children.push_back(Fork([&] { RateProcess(s, p, o, true); }));
  return WaitAll(children);
}

const char* kUsage =
    "usage: softib_bench_ring [-n ITERS] [-s BYTES] [-m MESSAGES] [--no-rate] [--only NAME]"
    " [--csv]\n"
    "  -n, --iters N      round trips per latency row (default 20000)\n"
    "  -s, --size BYTES   inline send size, 1..8 (default 8)\n"
    "  -m, --messages N   messages per rate slice (default 400000)\n"
    "  --no-rate          latency rows only\n"
    "  --only NAME        only rows whose name contains NAME (the floor always runs)\n"
    "  --csv              comma-separated rows instead of the table\n"
    "Floors: shm-spin (two processes poll one word each way), shm-yield-1cpu (both on\n"
    "CPU 1, polling with sched_yield), shm-futex (both sleep on the word).\n"
    "Policies (ring-*/rate-* rows): spin = poll with pause; yield = poll with sched_yield;\n"
    "futex = poll 2 us, then sleep on the doorbell futex; adaptive = poll 50 us (HCA with\n"
    "pause, user processes with sched_yield), then sleep. pin = HCA on CPU 0, both user\n"
    "processes on CPU 1. -dma: the HCA writes the 8 bytes with process_vm_writev.\n"
    "loopback-spin: A sends to itself, HCA on CPU 0 and A on CPU 1 both spinning; its\n"
    "round trip A -> HCA -> A is reported as the one-way figure of a machine with a CPU\n"
    "per actor. split-hca-futex: A on CPU 0, B on CPU 1 (polling with sched_yield), the\n"
    "HCA unpinned, sleeping on its doorbells after 2 us: woken by every post.\n";

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
      o->iterations = static_cast<uint32_t>(value());
    } else if (arg == "-s" || arg == "--size") {
      o->size = static_cast<uint32_t>(value());
      if (o->size > 8) Die("--size: inline sends of 1..8 bytes");
    } else if (arg == "-m" || arg == "--messages") {
      o->messages = static_cast<uint32_t>(std::max(2L, value()));
    } else if (arg == "--no-rate") {
      o->rate = false;
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
  const bool two_cpus = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
  const int cpu0 = two_cpus ? 0 : -1, cpu1 = two_cpus ? 1 : -1;
  // name, hca wait, poller wait, hca cpu, A cpu, B cpu, dma
  const Policy policies[] = {
      {"spin", Wait::kSpin, Wait::kSpin, -1, -1, -1, false},
      {"yield", Wait::kYield, Wait::kYield, -1, -1, -1, false},
      {"futex", Wait::kFutex, Wait::kFutex, -1, -1, -1, false},
      {"adaptive", Wait::kAdaptive, Wait::kAdaptive, -1, -1, -1, false},
      {"pin-spin-yield", Wait::kSpin, Wait::kYield, cpu0, cpu1, cpu1, false},
      {"pin-adaptive", Wait::kAdaptive, Wait::kAdaptive, cpu0, cpu1, cpu1, false},
      {"pin-adaptive-dma", Wait::kAdaptive, Wait::kAdaptive, cpu0, cpu1, cpu1, true},
      {"split-hca-futex", Wait::kFutex, Wait::kYield, -1, cpu0, cpu1, false},
      {"loopback-spin", Wait::kSpin, Wait::kSpin, cpu0, cpu1, cpu1, false, true},
  };
  std::vector<Row> rows;
  auto add = [&rows](std::string name, std::function<bool(Slice&, uint32_t)> run,
                     bool is_rate) -> Row& {
    Row& row = rows.emplace_back();
    row.name = std::move(name);
    row.run = std::move(run);
    row.is_rate = is_rate;
    return row;
  };
  add(
      "shm-spin", [](Slice& s, uint32_t n) { return RunFloor(s, n, FloorMode::kSpin, -1); }, false);
  add(
      "shm-yield-1cpu",
      [cpu1](Slice& s, uint32_t n) { return RunFloor(s, n, FloorMode::kYield, cpu1); }, false);
  add(
      "shm-futex", [](Slice& s, uint32_t n) { return RunFloor(s, n, FloorMode::kFutex, -1); },
      false);
  for (const Policy& p : policies) {
    Row& row = add(
        std::string("ring-") + p.name,
        [&o, p](Slice& s, uint32_t n) { return RunRing(s, p, o, n); }, false);
    // Three spinners on two CPUs hand over only at scheduler ticks: few samples suffice.
    if (p.hca == Wait::kSpin && p.poll == Wait::kSpin && !p.loopback) row.scale = 50;
  }
  if (o.rate) {
    for (const Policy& p : policies) {
      if ((p.poll == Wait::kSpin && !p.loopback) || p.poll == Wait::kFutex || p.dma) continue;
      add(
          std::string("rate-") + p.name, [&o, p](Slice& s, uint32_t) { return RunRate(s, p, o); },
          true);
    }
  }
  std::erase_if(rows, [&](const Row& r) {
    return r.name.rfind("shm-", 0) != 0 && r.name.find(o.only) == std::string::npos;
  });

  for (int round = 0; round < kRounds; ++round) {
    for (Row& row : rows) {
      uint32_t n = std::max<uint32_t>(1, o.iterations / kRounds / row.scale);
      Slice slice;
      MakeSlice(&slice, n);
      if (!row.run(slice, n)) Die(row.name + ": a process failed");
      if (slice.flags()->errors != 0) Die(row.name + ": data check failed");
      if (row.is_rate) {
        row.rates.push_back(slice.flags()->rate_mps);
      } else {
        row.samples.insert(row.samples.end(), slice.samples(), slice.samples() + n);
      }
    }
  }

  const double floor = Summarize(rows[0].samples).typical;
  const char* line =
      "---------------------------------------------------------------------------------------"
      "-----------------";
  if (o.csv) {
    std::printf(
        "test,bytes,iterations,t_min_us,t_typical_us,t_avg_us,t_p99_us,t_max_us,"
        "ratio_to_shm_floor,mmsg_per_s\n");
  } else {
    std::printf("%s\n", line);
    std::printf(
        "                 softib speed path: 8-byte SEND through rings and an HCA process\n");
    std::printf(" Latency         : one way = round trip / 2, microseconds\n");
    std::printf(" Iterations      : %u per latency row (spin-only rows /50), %d rounds\n",
                o.iterations, kRounds);
    std::printf(" CPUs online     : %ld; ring entries %u\n", sysconf(_SC_NPROCESSORS_ONLN),
                kRingEntries);
    std::printf("%s\n", line);
    std::printf(" %-22s %-6s %-11s %-11s %-15s %-11s %-11s %-11s %-8s\n", "test", "#bytes",
                "#iterations", "t_min[usec]", "t_typical[usec]", "t_avg[usec]", "t_p99[usec]",
                "t_max[usec]", "x floor");
  }
  for (Row& row : rows) {
    if (row.is_rate) continue;
    Summary s = Summarize(row.samples);
    std::printf(o.csv ? "%s,%u,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,\n"
                      : " %-22s %-6u %-11zu %-11.3f %-15.3f %-11.3f %-11.3f %-11.3f %-8.2f\n",
                row.name.c_str(), o.size, row.samples.size(), s.min, s.typical, s.avg, s.p99, s.max,
                s.typical / floor);
  }
  bool any_rate = false;
  for (Row& row : rows) {
    if (!row.is_rate) continue;
    if (!any_rate && !o.csv) {
      std::printf("%s\n", line);
      std::printf(" %-22s %-6s %-11s %-15s %-15s\n", "test", "#bytes", "#messages", "MMsg/s median",
                  "MMsg/s best");
    }
    any_rate = true;
    Summary s = Summarize(row.rates);
    std::printf(o.csv ? "%s,%u,%u,,,,,,,%.3f\n" : " %-22s %-6u %-11u %-15.3f %-15.3f\n",
                row.name.c_str(), o.size, o.messages * kRounds, s.typical, s.max);
  }
  if (!o.csv) std::printf("%s\n", line);
  return 0;
}
