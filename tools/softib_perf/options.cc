// softib_perf's command line, with CLI11: perftest's option letters where they exist.
#include "options.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <iostream>
#include <map>

namespace softib::perf {

namespace {

constexpr uint32_t kMaxSize = 1u << 30;   // one message; the buffers hold a few of them
constexpr uint32_t kMaxDepth = 1u << 14;  // the device's max_wrs

const std::map<std::string, TestKind>& TestNames() {
  static const std::map<std::string, TestKind> names = {
      {"send_lat", TestKind::kSendLat}, {"write_lat", TestKind::kWriteLat},
      {"read_lat", TestKind::kReadLat}, {"atomic_lat", TestKind::kAtomicLat},
      {"send_bw", TestKind::kSendBw},   {"write_bw", TestKind::kWriteBw},
      {"read_bw", TestKind::kReadBw},   {"atomic_bw", TestKind::kAtomicBw},
  };
  return names;
}

bool ParseU64(const std::string& text, int base, uint64_t* value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (base == 16 && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    begin += 2;
  }
  auto [ptr, ec] = std::from_chars(begin, end, *value, base);
  return ec == std::errc() && ptr == end && begin != end;
}

}  // namespace

const char* Name(TestKind kind) {
  for (const auto& [name, k] : TestNames()) {
    if (k == kind) return name.c_str();
  }
  return "?";
}

const char* Name(Transport transport) {
  switch (transport) {
    case Transport::kRc:
      return "RC";
    case Transport::kUc:
      return "UC";
    case Transport::kUd:
      return "UD";
  }
  return "?";
}

bool IsLatency(TestKind k) {
  return k == TestKind::kSendLat || k == TestKind::kWriteLat || k == TestKind::kReadLat ||
         k == TestKind::kAtomicLat;
}
bool IsSend(TestKind k) { return k == TestKind::kSendLat || k == TestKind::kSendBw; }
bool IsWrite(TestKind k) { return k == TestKind::kWriteLat || k == TestKind::kWriteBw; }
bool IsRead(TestKind k) { return k == TestKind::kReadLat || k == TestKind::kReadBw; }
bool IsAtomic(TestKind k) { return k == TestKind::kAtomicLat || k == TestKind::kAtomicBw; }

std::optional<OobAddress> ParseOobAddress(const std::string& text, std::string* error) {
  OobAddress address;
  if (text.rfind("unix:", 0) == 0) {
    address.kind = OobAddress::Kind::kUnix;
    address.path = text.substr(5);
    if (address.path.empty()) {
      *error = "unix: needs a socket path";
      return std::nullopt;
    }
    if (address.path.size() >= 108) {  // sizeof(sockaddr_un::sun_path)
      *error = "unix socket path longer than 107 bytes";
      return std::nullopt;
    }
    return address;
  }
  if (text.rfind("tcp:", 0) == 0) {
    const std::string rest = text.substr(4);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) {
      *error = "tcp: expects tcp:127.0.0.1:PORT";
      return std::nullopt;
    }
    const std::string host = rest.substr(0, colon);
    if (host != "127.0.0.1" && host != "localhost") {
      *error = "tcp: only 127.0.0.1 is allowed (the out-of-band exchange stays on loopback)";
      return std::nullopt;
    }
    uint64_t port = 0;
    if (!ParseU64(rest.substr(colon + 1), 10, &port) || port == 0 || port > 65535) {
      *error = "tcp: port must be 1..65535";
      return std::nullopt;
    }
    address.kind = OobAddress::Kind::kTcp;
    address.port = static_cast<uint16_t>(port);
    return address;
  }
  *error = "expected unix:PATH or tcp:127.0.0.1:PORT, got '" + text + "'";
  return std::nullopt;
}

ParseResult ParseCommandLine(int argc, const char* const* argv) {
  ParseResult result;
  Options& o = result.options;
  CLI::App app{
      "softib_perf: perftest-style latency and bandwidth tests over softib.\n"
      "Server: softib_perf write_bw --oob unix:/tmp/x.sock\n"
      "Client: softib_perf write_bw --oob unix:/tmp/x.sock --connect  (or: ... write_bw "
      "unix:/tmp/x.sock)\n"
      "In one process, both sides kernel clients of an in-process node: softib_perf write_bw "
      "--kernel"};
  app.name("softib_perf");
  std::string test_name, server, oob, service, ca, transport = "RC", atomic = "FETCH_AND_ADD";
  uint64_t size = 0;
  bool all = false;
  uint64_t min_size = 2, max_size = kMaxAllSize;
  uint32_t tx_depth = 0;
  app.add_option("test", test_name,
                 "send_lat, write_lat, read_lat, atomic_lat, send_bw, write_bw, read_bw or "
                 "atomic_bw")
      ->required();
  app.add_option("server", server,
                 "the server's out-of-band address (unix:PATH or tcp:127.0.0.1:PORT): makes "
                 "this process the client");
  app.add_option("-s,--size", size, "message size in bytes (default 2; atomics: 8)");
  app.add_option("-n,--iters", o.iterations, "iterations per size")->capture_default_str();
  app.add_flag("-a,--all", all, "every power of two from --min-size to --max-size (2 .. 8 MiB)");
  app.add_option("--min-size", min_size, "with -a: the first size")->capture_default_str();
  app.add_option("--max-size", max_size, "with -a: the last size")->capture_default_str();
  app.add_option("-d,--ca", ca,
                 "CA GUID in hex (default: the node's first CA for the server, its second for "
                 "the client, which is cabled to the first)");
  app.add_option("-i,--ib-port", o.port, "port of the CA")->capture_default_str();
  app.add_option("-t,--tx-depth", tx_depth,
                 "send queue depth: work requests in flight (default 128; latency tests 1)");
  app.add_option("-r,--rx-depth", o.rx_depth, "receive queue depth (send tests)")
      ->capture_default_str();
  app.add_option("-I,--inline-size", o.inline_size,
                 "send messages up to this size inline (default 220 for send/write latency, 0 "
                 "otherwise)");
  app.add_option("-c,--connection", transport, "RC, UC or UD")->capture_default_str();
  app.add_option("-A,--atomic-type", atomic, "FETCH_AND_ADD or CMP_AND_SWAP")
      ->capture_default_str();
  app.add_option("--run-dir", o.run_dir,
                 "the node's run directory (default: $SOFTIB_RUN_DIR, $XDG_RUNTIME_DIR/softib or "
                 "/tmp/softib-$UID)");
  app.add_option("--oob", oob,
                 "out-of-band exchange address: unix:PATH or tcp:127.0.0.1:PORT (the server "
                 "listens, the client connects)");
  app.add_option("--service-id", service,
                 "no out-of-band channel: the server registers this service ID (hex) with the "
                 "SA and listens on the CM; the client finds it through the SA and connects "
                 "through the CM (RC; user processes)");
  app.add_flag("--connect", o.connect, "be the client (connect to --oob or --service-id)");
  app.add_flag("--kernel", o.kernel,
               "run server and client in this process as kernel clients of an in-process node "
               "(two CAs back to back); no softibd, no --oob");
  app.add_flag("--json", o.json, "print the results as one JSON object");
  app.add_flag("--validate", o.validate,
               "check the payload bytes on the receiving side (and atomic results)");
  app.add_flag("--busy-poll", o.busy_poll, "poll without yielding the CPU");
  app.add_option("--timeout", o.timeout_s, "seconds without progress before giving up")
      ->capture_default_str();
  uint32_t inline_given = UINT32_MAX;
  try {
    app.parse(argc, argv);
    inline_given = app.count("--inline-size") ? o.inline_size : UINT32_MAX;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return {ParseResult::Kind::kExit, 0, {}};
  } catch (const CLI::ParseError& e) {
    std::cerr << "softib_perf: error: " << e.what() << "\n";
    return {ParseResult::Kind::kExit, 2, {}};
  }

  auto fail = [](const std::string& what) {
    std::cerr << "softib_perf: error: " << what << "\n";
    return ParseResult{ParseResult::Kind::kExit, 2, {}};
  };
  auto test = TestNames().find(test_name);
  if (test == TestNames().end()) {
    return fail("unknown test '" + test_name +
                "' (send_lat, write_lat, read_lat, atomic_lat, send_bw, write_bw, read_bw, "
                "atomic_bw)");
  }
  o.test = test->second;

  if (transport == "RC" || transport == "rc") {
    o.transport = Transport::kRc;
  } else if (transport == "UC" || transport == "uc") {
    o.transport = Transport::kUc;
  } else if (transport == "UD" || transport == "ud") {
    o.transport = Transport::kUd;
  } else {
    return fail("-c: expected RC, UC or UD, got '" + transport + "'");
  }
  if (o.transport != Transport::kRc && (IsRead(o.test) || IsAtomic(o.test))) {
    return fail(std::string(Name(o.test)) + " needs -c RC (" + Name(o.transport) +
                " has no RDMA READ or atomics)");
  }
  if (o.transport == Transport::kUd && IsWrite(o.test)) {
    return fail(std::string(Name(o.test)) + " needs -c RC or UC (UD has no RDMA WRITE)");
  }
  if (atomic == "FETCH_AND_ADD") {
    o.atomic_type = AtomicType::kFetchAdd;
  } else if (atomic == "CMP_AND_SWAP") {
    o.atomic_type = AtomicType::kCompareSwap;
  } else {
    return fail("-A: expected FETCH_AND_ADD or CMP_AND_SWAP, got '" + atomic + "'");
  }

  // Sizes.
  const uint64_t largest = o.transport == Transport::kUd ? 4096 : kMaxSize;
  if (IsAtomic(o.test)) {
    if ((size != 0 && size != 8) || all) return fail("atomic tests move 8 bytes: no -s or -a");
    o.sizes = {8};
  } else if (all) {
    if (size != 0) return fail("-s and -a exclude each other");
    if (min_size < 1 || max_size < min_size || max_size > largest) {
      return fail("-a: need 1 <= --min-size <= --max-size <= " + std::to_string(largest));
    }
    for (uint64_t s = min_size; s <= max_size; s *= 2) o.sizes.push_back(static_cast<uint32_t>(s));
  } else {
    if (app.count("--min-size") || app.count("--max-size")) {
      return fail("--min-size and --max-size go with -a");
    }
    if (size == 0) size = 2;
    if (size > largest) {
      return fail("-s: at most " + std::to_string(largest) + " bytes" +
                  (o.transport == Transport::kUd ? " on UD (one MTU)" : ""));
    }
    o.sizes = {static_cast<uint32_t>(size)};
  }
  if (o.iterations < 1) return fail("-n: at least 1 iteration");
  if (IsLatency(o.test)) {
    if (tx_depth > 1) return fail("-t: latency tests keep one message in flight");
    o.tx_depth = 1;
  } else {
    o.tx_depth = app.count("--tx-depth") ? tx_depth : 128;
  }
  if (o.tx_depth < 1 || o.tx_depth > kMaxDepth) {
    return fail("-t: 1.." + std::to_string(kMaxDepth));
  }
  if (o.rx_depth < 1 || o.rx_depth > kMaxDepth) {
    return fail("-r: 1.." + std::to_string(kMaxDepth));
  }
  if (inline_given != UINT32_MAX) {
    if (inline_given > 256) return fail("-I: at most 256 bytes inline (MAX_INLINE_DATA)");
    if (inline_given > 0 && !(IsSend(o.test) || IsWrite(o.test))) {
      return fail("-I: only sends and RDMA writes carry inline data");
    }
  } else {
    o.inline_size = (o.test == TestKind::kSendLat || o.test == TestKind::kWriteLat) ? 220 : 0;
  }
  if (o.port < 1 || o.port > 2) return fail("-i: port 1 or 2");
  if (!ca.empty()) {
    if (!ParseU64(ca, 16, &o.ca_guid) || o.ca_guid == 0) {
      return fail("-d: expected a CA GUID in hex, got '" + ca + "'");
    }
  }
  if (o.timeout_s < 1) return fail("--timeout: at least 1 second");

  // Roles.
  std::string error;
  if (o.kernel) {
    if (!server.empty() || !oob.empty() || !service.empty() || o.connect || !o.run_dir.empty()) {
      return fail(
          "--kernel runs both sides in this process: no server address, --oob, --service-id, "
          "--connect or --run-dir");
    }
    return result;
  }
  if (!service.empty()) {
    uint64_t id = 0;
    if (!ParseU64(service, 16, &id) || id == 0) {
      return fail("--service-id: expected a nonzero service ID in hex, got '" + service + "'");
    }
    if (!server.empty() || !oob.empty()) {
      return fail("--service-id connects through the SA and the CM: no --oob or server address");
    }
    if (o.transport != Transport::kRc) {
      // The barriers ride the QP: on UC a control message meeting an empty receive queue
      // is dropped; UD would need SIDR.
      return fail("--service-id: RC only (the control messages travel on the QP)");
    }
    if (o.iterations > kMaxCmIterations) {
      return fail("--service-id: at most " + std::to_string(kMaxCmIterations) +
                  " iterations (the counts travel in 28 bits)");
    }
    o.service_id = id;
    return result;
  }
  if (!server.empty() && !oob.empty())
    return fail(
        "give the server's address once (--oob or "
        "the positional server)");
  if (!server.empty()) {
    o.connect = true;
    oob = server;
  }
  if (oob.empty()) {
    return fail(o.connect ? "the client needs the server's address (--oob ADDRESS)"
                          : "the server needs --oob unix:PATH or tcp:127.0.0.1:PORT (or use "
                            "--kernel)");
  }
  o.oob = ParseOobAddress(oob, &error);
  if (!o.oob) return fail("--oob: " + error);
  return result;
}

}  // namespace softib::perf
