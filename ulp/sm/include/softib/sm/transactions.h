// Request/response transactions over a MadPort: a window of requests in flight, TID
// matching, per-request timeouts and retries. Single-threaded: Run() drives the port until
// every submitted request has completed; completion callbacks may submit more (which is
// how discovery walks the fabric breadth-first with many SMPs in flight).
//
// TIDs: the low 32 bits are ours and are the only ones matched, because transports own the
// high half (umad2sim writes the agent id into bits 47..32, ibsim the client index into
// bits 63..48).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "softib/sm/mad_port.h"

namespace softib::sm {

struct TransactionOptions {
  unsigned window = 64;  // requests in flight
  int timeout_ms = 200;  // per attempt
  unsigned retries = 3;  // extra attempts after the first
};

enum class TxStatus : uint8_t { kOk, kTimeout };

struct TxResult {
  TxStatus status = TxStatus::kTimeout;
  MadBytes response{};
  std::vector<uint8_t> transfer;  // the whole response when it came by RMPP (ReceivedMad)
};

struct TxStats {
  uint64_t submitted = 0;
  uint64_t sent = 0;  // attempts, retries included
  uint64_t retries = 0;
  uint64_t timeouts = 0;   // transactions that failed after every retry
  uint64_t unmatched = 0;  // responses with no transaction (late, duplicated, foreign)
};

class Transactions {
 public:
  using Callback = std::function<void(const TxResult&)>;
  using RequestHandler = std::function<void(const ReceivedMad&)>;

  Transactions(MadPort& port, TransactionOptions options);

  // Queues a request; its TID is replaced by ours. `done` runs from Run().
  void Submit(const MadBytes& request, const MadAddress& to, Callback done);
  // Drives the port until nothing is queued or in flight. False (and LastError) when the
  // port fails; the transactions still pending are then abandoned.
  bool Run();
  // Waits up to `timeout_ms` for unsolicited requests and hands them to the handler.
  bool Poll(int timeout_ms);

  // Requests from other nodes (SMInfo, traps) arrive here while Run/Poll drive the port.
  void set_request_handler(RequestHandler handler) { on_request_ = std::move(handler); }
  // Submits more requests when the window has room and nothing is queued (the next Run
  // drives it until it returns false, then drops it): a long series — 337 k LFT blocks on
  // ft-k36 — is built as it is sent instead of held in memory all at once. It must submit
  // at least one request each time it returns true.
  void set_feeder(std::function<bool()> feeder) { feeder_ = std::move(feeder); }
  // Called after every completion; cheap hooks only (progress output).
  void set_progress(std::function<void()> progress) { progress_ = std::move(progress); }

  const TxStats& stats() const { return stats_; }
  std::size_t in_flight() const { return in_flight_.size(); }
  // Submitted and not completed yet (queued or in flight).
  std::size_t pending() const { return queue_.size() + in_flight_.size(); }
  const std::string& last_error() const { return error_; }
  MadPort& port() { return port_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    MadBytes request;
    MadAddress to;
    Callback done;
    unsigned attempts = 0;
    Clock::time_point deadline;
  };
  struct Expiry {
    uint32_t tid;
    unsigned attempt;
    Clock::time_point deadline;
  };

  bool SendOne(uint32_t tid, Pending& pending);
  bool FillWindow();
  // Waits up to `timeout_ms` for one MAD, then takes every MAD already queued (up to
  // kMaxDrainPerWait) before the caller judges deadlines: a thread descheduled past a
  // deadline (a loaded machine) finds the answers that came meanwhile waiting, and they are
  // answers, not timeouts.
  bool ReceiveReady(int timeout_ms);
  static constexpr int kMaxDrainPerWait = 256;
  bool ReceiveOne(int timeout_ms, bool* got);
  bool ExpireOld();
  void Complete(uint32_t tid, TxStatus status, ReceivedMad* response);

  MadPort& port_;
  TransactionOptions options_;
  uint32_t next_tid_ = 1;
  std::deque<std::pair<uint32_t, Pending>> queue_;
  std::unordered_map<uint32_t, Pending> in_flight_;
  std::deque<Expiry> expiries_;  // send order = deadline order (one timeout for all)
  TxStats stats_;
  RequestHandler on_request_;
  std::function<void()> progress_;
  std::function<bool()> feeder_;
  std::string error_;
};

}  // namespace softib::sm
