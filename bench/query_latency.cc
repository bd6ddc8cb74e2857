// softib_bench_query: a query verb's round trip through the whole control path — the
// generated user proxy, the channel, the bridge's user-mode IRP, the kernel dispatch, the
// Access Layer's handler and the HCA driver — against a softibd process, and its floor in
// the same run: a raw AF_UNIX SOCK_SEQPACKET round trip between two processes carrying
// datagrams as long as the verb's request and answer frames. Goal (issue 3): ≤ 1.3×.
//
// Rows (interleaved in rounds, so that other load on the machine hits both alike):
//   floor       request-sized datagram to a forked echo process, answer-sized datagram back
//   QueryCa     proxy::QueryCa on a CA file of softibd's node (CA and port attributes)
//   QueryQp     proxy::QueryQp of an RC QP in RESET on the same file
// Nothing is pinned and nobody spins: each round trip is two wake-ups, as in the floor.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "softib/channel/protocol.h"
#include "softib/user/access_layer.h"
#include "softibd_instance.h"
#include "tied_child.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_cq_proxy.h"
#include "user/verbs_pd_av_proxy.h"
#include "user/verbs_qp_proxy.h"

namespace {

namespace abi = softib::abi;
namespace channel = softib::channel;
namespace user = softib::user;
using softib::bench::Die;
using softib::bench::Summarize;

constexpr const char* kProgram = "softib_bench_query";
constexpr int kRounds = 20;

struct Options {
  uint32_t iterations = 20000;
  std::string softibd = SOFTIBD_BINARY;
  bool json = false;
};

bool ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--iters" || arg == "-n") && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 1) Die(kProgram, "bad value for " + arg);
      options->iterations = static_cast<uint32_t>(v);
    } else if (arg == "--softibd" && i + 1 < argc) {
      options->softibd = argv[++i];
    } else if (arg == "--json") {
      options->json = true;
    } else {
      std::printf(
          "usage: %s [--iters N] [--softibd PATH] [--json]\n"
          "  --iters N       round trips per row (default 20000)\n"
          "  --softibd PATH  the daemon to start (default: this build's)\n"
          "  --json          one JSON object instead of the table\n",
          kProgram);
      return arg == "--help" || arg == "-h";
    }
  }
  return true;
}

// Answers each datagram with one of `answer_bytes` until the peer hangs up.
void EchoLoop(int fd, size_t answer_bytes) {
  std::vector<uint8_t> buffer(std::max<size_t>(channel::kMaxRequestFrameBytes, answer_bytes));
  for (;;) {
    const ssize_t r = recv(fd, buffer.data(), buffer.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    if (send(fd, buffer.data(), answer_bytes, MSG_NOSIGNAL) < 0) return;
  }
}

struct Row {
  std::string name;
  std::function<void()> round_trip;
  std::vector<double> samples_us;
};

void Check(user::Status status, const char* what) {
  if (status != user::Status::SUCCESS) {
    Die(kProgram,
        std::string(what) + " failed: status " + std::to_string(static_cast<uint32_t>(status)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, &options)) return 2;
  constexpr size_t kPorts = 2;
  const size_t request_frame = sizeof(channel::RequestHeader) + sizeof(abi::QueryCaIn);
  const size_t answer_frame = sizeof(channel::ResponseHeader) + sizeof(abi::QueryCaOut) +
                              kPorts * sizeof(abi::PortAttributes);

  // The floor's echo process first, while this process has no threads.
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) Die(kProgram, "socketpair");
  const pid_t parent = getpid();
  const pid_t echo = fork();
  if (echo < 0) Die(kProgram, "fork");
  if (echo == 0) {
    softib::test_support::DieWithParent(parent);  // never outlives the benchmark
    close(pair[0]);
    EchoLoop(pair[1], answer_frame);
    _exit(0);
  }
  close(pair[1]);

  softib::integration::SoftibdInstance node;
  if (!node.Start(options.softibd, {"--cas", "1", "--ports", "2"})) {
    Die(kProgram, "softibd did not start: " + options.softibd);
  }
  user::AlFile al;
  Check(user::OpenAl(node.run_dir().c_str(), &al), "OpenAl");
  abi::GetCaGuidsIn guids_in{};
  guids_in.al = al.al;
  abi::GetCaGuidsOut guids_out{};
  uint64_t guids[16] = {};
  Check(user::proxy::GetCaGuids(al.device, guids_in, guids_out, guids), "GetCaGuids");
  user::CaFile ca;
  Check(user::OpenCaByGuid(al, guids[0], 0, &ca), "OpenCaByGuid");

  // An RC QP in RESET to query.
  abi::AllocPdIn pd_in{};
  pd_in.ca = ca.ca;
  abi::AllocPdOut pd_out{};
  Check(user::proxy::AllocPd(ca.device, pd_in, pd_out), "AllocPd");
  abi::CreateCqIn cq_in{};
  cq_in.ca = ca.ca;
  cq_in.size = 16;
  abi::CreateCqOut cq_out{};
  Check(user::proxy::CreateCq(ca.device, cq_in, cq_out), "CreateCq");
  abi::CreateQpIn qp_in{};
  qp_in.pd = pd_out.pd;
  qp_in.send_cq = cq_out.cq;
  qp_in.recv_cq = cq_out.cq;
  qp_in.params.qp_type = abi::QpType::RC;
  qp_in.params.caps.sq_depth = 16;
  qp_in.params.caps.rq_depth = 16;
  qp_in.params.caps.sq_sge = 1;
  qp_in.params.caps.rq_sge = 1;
  abi::CreateQpOut qp_out{};
  Check(user::proxy::CreateQp(ca.device, qp_in, qp_out), "CreateQp");

  std::vector<Row> rows;
  std::vector<uint8_t> datagram(std::max(request_frame, answer_frame), 0x5a);
  rows.push_back({"floor",
                  [&] {
                    if (send(pair[0], datagram.data(), request_frame, MSG_NOSIGNAL) < 0) {
                      Die(kProgram, "floor send");
                    }
                    if (recv(pair[0], datagram.data(), datagram.size(), 0) <= 0) {
                      Die(kProgram, "floor recv");
                    }
                  },
                  {}});
  abi::QueryCaIn query_in{};
  query_in.ca = ca.ca;
  abi::QueryCaOut query_out{};
  abi::PortAttributes ports[kPorts];
  rows.push_back(
      {"QueryCa",
       [&] { Check(user::proxy::QueryCa(ca.device, query_in, query_out, ports), "QueryCa"); },
       {}});
  abi::QueryQpIn query_qp_in{};
  query_qp_in.qp = qp_out.qp;
  abi::QueryQpOut query_qp_out{};
  rows.push_back(
      {"QueryQp",
       [&] { Check(user::proxy::QueryQp(ca.device, query_qp_in, query_qp_out), "QueryQp"); },
       {}});
  if (query_out.attributes.num_ports != 0 && query_out.attributes.num_ports != kPorts) {
    Die(kProgram, "unexpected port count");
  }

  const uint32_t per_round = std::max<uint32_t>(1, options.iterations / kRounds);
  for (int round = 0; round < kRounds; ++round) {
    for (Row& row : rows) {
      for (uint32_t i = 0; i < per_round; ++i) {
        const uint64_t start = softib::bench::NowNs();
        row.round_trip();
        row.samples_us.push_back(static_cast<double>(softib::bench::NowNs() - start) / 1000.0);
      }
    }
  }

  user::CloseCaFile(&ca);  // the kernel destroys the QP, CQ and PD with the file
  user::CloseAl(&al);
  node.Stop();
  close(pair[0]);
  waitpid(echo, nullptr, 0);

  const double floor = Summarize(rows[0].samples_us).typical;
  if (options.json) {
    std::printf("{\"benchmark\":\"query\",\"iterations\":%u,\"rows\":[", per_round * kRounds);
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto s = Summarize(rows[i].samples_us);
      std::printf(
          "%s{\"test\":\"%s\",\"t_min_us\":%.3f,\"t_typical_us\":%.3f,\"t_avg_us\":%.3f,"
          "\"t_p99_us\":%.3f,\"t_max_us\":%.3f,\"ratio\":%.3f}",
          i ? "," : "", rows[i].name.c_str(), s.min, s.typical, s.avg, s.p99, s.max,
          s.typical / floor);
    }
    std::printf("]}\n");
    return 0;
  }
  const char* line =
      "------------------------------------------------------------------------------------------"
      "---";
  std::printf("%s\n", line);
  std::printf("            softib control path: a query verb round trip through softibd\n");
  std::printf(
      " Floor           : AF_UNIX SOCK_SEQPACKET between two processes, %zu B out, %zu B back\n",
      request_frame, answer_frame);
  std::printf(" Iterations      : %u per row, interleaved in %d rounds\n", per_round * kRounds,
              kRounds);
  std::printf(" CPUs online     : %ld (nothing pinned, nobody spins)\n",
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("%s\n", line);
  std::printf(" %-9s %-11s %-11s %-15s %-11s %-11s %-11s %-8s\n", "test", "#iterations",
              "t_min[usec]", "t_typical[usec]", "t_avg[usec]", "t_p99[usec]", "t_max[usec]",
              "ratio");
  for (const Row& row : rows) {
    const auto s = Summarize(row.samples_us);
    std::printf(" %-9s %-11zu %-11.2f %-15.2f %-11.2f %-11.2f %-11.2f %-8.2f\n", row.name.c_str(),
                row.samples_us.size(), s.min, s.typical, s.avg, s.p99, s.max, s.typical / floor);
  }
  std::printf("%s\n", line);
  std::printf(" ratio QueryCa/floor (t_typical): %.2f\n",
              Summarize(rows[1].samples_us).typical / floor);
  std::printf("%s\n", line);
  return 0;
}
