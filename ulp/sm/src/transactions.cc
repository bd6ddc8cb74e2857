// The transaction engine: a send window, TID matching on the low 32 bits, timeouts and
// retries, all from one thread.
#include "softib/sm/transactions.h"

#include <algorithm>

#include "softib/sm/smp.h"

namespace softib::sm {
namespace {

uint64_t GetTid(const MadBytes& mad) {
  uint64_t tid = 0;
  for (int i = 8; i < 16; ++i) tid = tid << 8 | mad[i];
  return tid;
}

void SetTid(MadBytes& mad, uint64_t tid) {
  for (int i = 15; i >= 8; --i) {
    mad[i] = static_cast<uint8_t>(tid);
    tid >>= 8;
  }
}

bool IsResponse(const MadBytes& mad) { return (mad[3] & 0x80) != 0; }

}  // namespace

Transactions::Transactions(MadPort& port, TransactionOptions options)
    : port_(port), options_(options) {
  options_.window = std::max(1u, options_.window);
  options_.timeout_ms = std::max(1, options_.timeout_ms);
}

void Transactions::Submit(const MadBytes& request, const MadAddress& to, Callback done) {
  const uint32_t tid = next_tid_++;
  if (next_tid_ == 0) next_tid_ = 1;
  Pending pending{request, to, std::move(done), 0, {}};
  SetTid(pending.request, tid);
  queue_.emplace_back(tid, std::move(pending));
  ++stats_.submitted;
}

bool Transactions::SendOne(uint32_t tid, Pending& pending) {
  ++pending.attempts;
  ++stats_.sent;
  pending.deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  expiries_.push_back({tid, pending.attempts, pending.deadline});
  if (port_.Send(pending.request, pending.to, options_.timeout_ms) == PortStatus::kError) {
    error_ = "send failed on " + port_.Describe() + ": " + port_.LastError();
    return false;
  }
  return true;
}

bool Transactions::FillWindow() {
  while (in_flight_.size() < options_.window) {
    if (queue_.empty()) {
      if (!feeder_) break;
      if (!feeder_() || queue_.empty()) feeder_ = nullptr;
      continue;
    }
    auto [tid, pending] = std::move(queue_.front());
    queue_.pop_front();
    auto [it, inserted] = in_flight_.emplace(tid, std::move(pending));
    (void)inserted;
    if (!SendOne(tid, it->second)) return false;
  }
  return true;
}

void Transactions::Complete(uint32_t tid, TxStatus status, ReceivedMad* response) {
  auto it = in_flight_.find(tid);
  if (it == in_flight_.end()) return;
  Callback done = std::move(it->second.done);
  in_flight_.erase(it);
  TxResult result;
  result.status = status;
  if (response) {
    result.response = response->mad;
    result.transfer = std::move(response->transfer);
  }
  if (status == TxStatus::kTimeout) ++stats_.timeouts;
  if (done) done(result);
  if (progress_) progress_();
}

bool Transactions::ReceiveReady(int timeout_ms) {
  bool got = false;
  if (!ReceiveOne(timeout_ms, &got)) return false;
  for (int taken = 1; got && taken < kMaxDrainPerWait; ++taken) {
    if (!ReceiveOne(0, &got)) return false;
  }
  return true;
}

bool Transactions::ReceiveOne(int timeout_ms, bool* got) {
  ReceivedMad rx;
  *got = false;
  const PortStatus st = port_.Receive(rx, timeout_ms);
  if (st == PortStatus::kTimeout) return true;
  *got = st == PortStatus::kOk;
  if (st == PortStatus::kError) {
    error_ = "receive failed on " + port_.Describe() + ": " + port_.LastError();
    return false;
  }
  const uint32_t tid = static_cast<uint32_t>(GetTid(rx.mad));
  if (rx.send_failed) {
    // The transport gave our request back: retry now rather than wait for the deadline.
    auto it = in_flight_.find(tid);
    if (it == in_flight_.end()) return true;
    if (it->second.attempts > options_.retries) {
      Complete(tid, TxStatus::kTimeout, nullptr);
      return true;
    }
    ++stats_.retries;
    return SendOne(tid, it->second);
  }
  if (!IsResponse(rx.mad)) {
    if (on_request_) on_request_(rx);
    return true;
  }
  if (!in_flight_.count(tid)) {
    ++stats_.unmatched;
    return true;
  }
  Complete(tid, TxStatus::kOk, &rx);
  return true;
}

bool Transactions::ExpireOld() {
  const auto now = Clock::now();
  while (!expiries_.empty() && expiries_.front().deadline <= now) {
    const Expiry e = expiries_.front();
    expiries_.pop_front();
    auto it = in_flight_.find(e.tid);
    if (it == in_flight_.end() || it->second.attempts != e.attempt) continue;  // stale
    if (it->second.attempts > options_.retries) {
      Complete(e.tid, TxStatus::kTimeout, nullptr);
      continue;
    }
    ++stats_.retries;
    if (!SendOne(e.tid, it->second)) return false;
  }
  return true;
}

bool Transactions::Run() {
  while (!queue_.empty() || !in_flight_.empty() || feeder_) {
    if (!FillWindow()) {
      feeder_ = nullptr;
      return false;
    }
    int wait_ms = 0;
    if (!expiries_.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          expiries_.front().deadline - Clock::now());
      wait_ms = static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, options_.timeout_ms));
    }
    if (!ReceiveReady(wait_ms) || !ExpireOld()) {
      feeder_ = nullptr;
      return false;
    }
  }
  expiries_.clear();
  return true;
}

bool Transactions::Poll(int timeout_ms) { return ReceiveReady(timeout_ms) && ExpireOld(); }

}  // namespace softib::sm
