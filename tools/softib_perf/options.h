// softib_perf's command line, in the spirit of perftest's (ib_send_lat, ib_write_bw, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace softib::perf {

enum class TestKind {
  kSendLat,
  kWriteLat,
  kReadLat,
  kAtomicLat,
  kSendBw,
  kWriteBw,
  kReadBw,
  kAtomicBw,
};

enum class Transport { kRc, kUc, kUd };
enum class AtomicType { kFetchAdd, kCompareSwap };

const char* Name(TestKind kind);
const char* Name(Transport transport);
bool IsLatency(TestKind kind);
bool IsSend(TestKind kind);
bool IsAtomic(TestKind kind);
bool IsRead(TestKind kind);
bool IsWrite(TestKind kind);

// Where the out-of-band exchange (QPN, LID, PSN, rkey, vaddr, as perftest's TCP exchange)
// listens or connects: a Unix socket path or a loopback TCP port.
struct OobAddress {
  enum class Kind { kUnix, kTcp } kind = Kind::kUnix;
  std::string path;   // kUnix
  uint16_t port = 0;  // kTcp, on 127.0.0.1
};
// "unix:PATH" or "tcp:127.0.0.1:PORT" (also "tcp:localhost:PORT"); nullopt and `error` else.
std::optional<OobAddress> ParseOobAddress(const std::string& text, std::string* error);

struct Options {
  TestKind test = TestKind::kSendLat;
  std::vector<uint32_t> sizes;  // one, or every power of two of -a
  uint32_t iterations = 1000;
  uint64_t ca_guid = 0;  // host order; 0: the first CA (server) / the second CA (client)
  uint8_t port = 1;
  uint32_t tx_depth = 128;
  uint32_t rx_depth = 512;
  uint32_t inline_size = 0;
  Transport transport = Transport::kRc;
  AtomicType atomic_type = AtomicType::kFetchAdd;
  std::string run_dir;  // "" : the default node's
  std::optional<OobAddress> oob;
  // Instead of --oob: the server registers this service (SA ServiceRecord) and listens on
  // the CM; the client finds it through the SA and connects through the CM (host order).
  std::optional<uint64_t> service_id;
  bool connect = false;  // client (default: server)
  bool kernel = false;   // both sides as kernel clients of an in-process node
  bool json = false;
  bool validate = false;   // check every payload byte on the receiving side
  bool busy_poll = false;  // spin without yielding the CPU between polls
  uint32_t timeout_s = 30;
};

struct ParseResult {
  enum class Kind { kRun, kExit } kind = Kind::kRun;
  int exit_code = 0;  // kExit: 0 after --help, 2 after a bad command line
  Options options;
};

// --help prints the usage to stdout; a bad command line prints one
// "softib_perf: error: ..." line to stderr; both then ask to exit.
ParseResult ParseCommandLine(int argc, const char* const* argv);

// With --service-id the closing counts travel as immediate data (control_qp.h).
inline constexpr uint32_t kMaxCmIterations = (1u << 28) - 1;

// The largest message -a reaches (perftest's 2^23).
inline constexpr uint32_t kMaxAllSize = 8u << 20;

}  // namespace softib::perf
