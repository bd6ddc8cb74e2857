// softib_perf: perftest-style tests over softib (README.md).
//   softib_perf write_bw --oob unix:/tmp/x.sock                 # server
//   softib_perf write_bw --oob unix:/tmp/x.sock --connect       # client
//   softib_perf write_bw --service-id 0x1000 [--connect]        # by the SA and the CM
//   softib_perf write_bw --kernel                               # both sides, in-process
// Exit codes: 0 success, 1 the run failed, 2 a bad command line.
#include <cstdio>

#include "kernel_backend.h"
#include "options.h"
#include "service_session.h"
#include "session.h"

namespace softib::perf {
namespace {

void Print(const Options& o, const RunReport& report) {
  const std::string text = o.json ? FormatJson(report) : FormatTable(report);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "softib_perf: %s\n", what.c_str());
  return 1;
}

int RunKernel(const Options& o) {
  std::string error;
  auto node = InProcessNode::Boot("softib_perf", &error);
  if (node == nullptr) return Fail(error);
  RunReport report, server_report;
  if (!RunInProcess(*node, o, &report, &server_report, &error)) return Fail(error);
  Print(o, report);
  return 0;
}

int RunService(const Options& o) {
  std::string error;
  RunReport report;
  if (!RunServiceSession(o, &report, &error)) {
    return Fail(std::string(o.connect ? "client" : "server") + ": " + error);
  }
  Print(o, report);
  return 0;
}

int RunProcess(const Options& o) {
  if (o.service_id) return RunService(o);
  std::string error;
  OobChannel oob;
  const auto limit = std::chrono::seconds(o.timeout_s);
  if (o.connect ? !OobChannel::Connect(*o.oob, limit, &oob, &error)
                : !OobChannel::Accept(*o.oob, limit * 4, &oob, &error)) {
    return Fail(error);
  }
  auto backend = MakeUserBackend(o.run_dir, o.busy_poll);
  RunReport report;
  if (!RunSession(o, o.connect, *backend, oob, &report, &error)) {
    return Fail(std::string(o.connect ? "client" : "server") + ": " + error);
  }
  Print(o, report);
  return 0;
}

}  // namespace
}  // namespace softib::perf

int main(int argc, char** argv) {
  using namespace softib::perf;
  const ParseResult parsed = ParseCommandLine(argc, argv);
  if (parsed.kind == ParseResult::Kind::kExit) return parsed.exit_code;
  return parsed.options.kernel ? RunKernel(parsed.options) : RunProcess(parsed.options);
}
