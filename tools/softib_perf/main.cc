// softib_perf: perftest-style tests over softib (README.md).
//   softib_perf write_bw --oob unix:/tmp/x.sock                 # server
//   softib_perf write_bw --oob unix:/tmp/x.sock --connect       # client
//   softib_perf write_bw --kernel                               # both sides, in-process
// Exit codes: 0 success, 1 the run failed, 2 a bad command line.
#include <cstdio>
#include <thread>

#include "kernel_backend.h"
#include "options.h"
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
  auto server_backend = node->MakeClient("softib_perf_server", o.busy_poll, &error);
  auto client_backend =
      server_backend ? node->MakeClient("softib_perf_client", o.busy_poll, &error) : nullptr;
  if (client_backend == nullptr) return Fail(error);
  OobChannel server_end, client_end;
  if (!OobChannel::Pair(&server_end, &client_end, &error)) return Fail(error);

  Options server_options = o;
  server_options.ca_guid = 0;  // the client's -d names its CA; the server takes the other
  RunReport server_report;
  std::string server_error;
  bool server_ok = false;
  std::thread server([&] {
    server_ok = RunSession(server_options, false, *server_backend, server_end, &server_report,
                           &server_error);
    if (!server_ok) server_end = OobChannel();  // unblocks the client
  });
  RunReport report;
  const bool ok = RunSession(o, true, *client_backend, client_end, &report, &error);
  if (!ok) client_end = OobChannel();
  server.join();
  client_backend.reset();
  server_backend.reset();
  node.reset();
  if (!ok) return Fail("client: " + error + (server_ok ? "" : "; server: " + server_error));
  if (!server_ok) return Fail("server: " + server_error);
  Print(o, report);
  return 0;
}

int RunProcess(const Options& o) {
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
