// The loops. Each side keeps its receive queue full (send tests), counts the sends in
// flight against tx_depth, and treats any completion status other than SUCCESS as the
// end of the run.
#include "runner.h"

#include <endian.h>
#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "control_qp.h"

namespace softib::perf {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kBatch = 16;

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

class Side {
 public:
  Side(Endpoint& ep, OobChannel* oob, const TestPlan& plan, bool client, const RunLimits& limits,
       RunReport* report)
      : ep_(ep), oob_(oob), plan_(plan), client_(client), limits_(limits), report_(report) {}

  bool Run(std::string* error);

 private:
  bool Fail(const std::string& what) {
    if (error_->empty()) *error_ = what;
    return false;
  }
  TestKind test() const { return static_cast<TestKind>(plan_.test); }
  bool validate() const { return plan_.validate != 0; }
  bool reliable() const { return ep_.transport() == Transport::kRc; }

  // Progress deadline: pushed forward by every completion.
  void Progress() { deadline_ = Clock::now() + limits_.timeout; }
  bool Expired() { return Clock::now() > deadline_; }
  void Relax() {
    if (!limits_.busy_poll) sched_yield();
  }

  // The control channel: the out-of-band socket, or control messages on the QP.
  bool SendToken(const Token& token);
  bool PostControlSend(const Token& token);
  bool ReceiveToken(Token* token, std::chrono::milliseconds limit);
  bool Barrier(uint32_t code, uint64_t value, Token* theirs) {
    if (!SendToken(Token{code, 0, value}) || !ReceiveToken(theirs, limits_.timeout)) {
      return false;
    }
    if (theirs->code == code) return true;
    return Fail(theirs->code == kFailed ? "the peer failed" : "the peer is out of step");
  }
  // The peer's kDone arrived (without waiting); false while nothing is there.
  bool PeerDone(Token* token) {
    if (oob_ == nullptr) {
      if (tokens_.empty()) return false;
      *token = tokens_.front();
      tokens_.pop_front();
      return true;
    }
    pollfd p{oob_->fd(), POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    return oob_->ReceiveValue(token, limits_.timeout, error_);
  }

  void FillSource(uint32_t size) {
    uint8_t* source = ep_.buffer() + ep_.layout().source_offset;
    for (uint32_t i = 0; i < size; ++i) source[i] = PatternByte(size, i);
  }
  static bool MatchesPattern(const uint8_t* bytes, uint32_t size) {
    for (uint32_t i = 0; i < size; ++i) {
      if (bytes[i] != PatternByte(size, i)) return false;
    }
    return true;
  }
  bool CheckPattern(const uint8_t* bytes, uint32_t size, uint32_t check_bytes, const char* what) {
    for (uint32_t i = 0; i < check_bytes; ++i) {
      if (bytes[i] != PatternByte(size, i)) {
        return Fail(std::string("validation: ") + what + ": byte " + std::to_string(i) + " is " +
                    std::to_string(bytes[i]) + ", expected " +
                    std::to_string(PatternByte(size, i)));
      }
    }
    ++report_->validated_messages;
    return true;
  }

  abi::SendWorkRequest MakeSend(uint64_t wr_id, uint32_t size) const;
  abi::SendWorkRequest MakeRdma(uint64_t wr_id, uint32_t size, uint64_t index) const;
  bool PostRecvSlot(uint32_t slot);
  bool PostControlRecv(uint64_t wr_id);
  bool PostSends(const abi::SendWorkRequest* wrs, uint32_t count);

  // Polls one batch; handles receives (validation, repost) and counts send completions.
  // *got: completions taken (0 after an idle wait).
  bool PollBatch(uint32_t size, uint32_t* got);
  // Waits until `received_` reaches `target` (send tests).
  bool WaitReceived(uint64_t target, uint32_t size);
  // Waits until at most `limit` sends are in flight.
  bool WaitSendsBelow(uint32_t limit, uint32_t size);

  bool SendLatency(uint32_t size);
  bool WriteLatency(uint32_t size);
  bool RequestLatency(uint32_t size);  // read and atomic: client only
  bool Bandwidth(uint32_t size);       // client
  bool SendBwServer(uint32_t size);
  bool PassiveServer(uint32_t size);  // write/read/atomic bw: the server's memory is used

  Endpoint& ep_;
  OobChannel* oob_;
  const TestPlan& plan_;
  bool client_;
  RunLimits limits_;
  RunReport* report_;
  std::string* error_ = nullptr;
  Clock::time_point deadline_;

  uint64_t received_ = 0;  // receive completions this size
  uint32_t in_flight_ = 0;
  uint64_t completed_ = 0;              // send-queue completions this size
  std::vector<uint64_t> completed_at_;  // bandwidth: completion time per wr_id
  std::vector<abi::WorkCompletion> wcs_ = std::vector<abi::WorkCompletion>(kBatch);
  std::deque<Token> tokens_;        // control messages received on the QP, not yet read
  uint32_t control_in_flight_ = 0;  // control SENDs not completed yet
  uint32_t size_ = 0;               // the size being run (what data receives must carry)
};

bool Side::PostControlRecv(uint64_t wr_id) {
  abi::RecvWorkRequest wr{};
  wr.wr_id = wr_id;  // no segment: a control message carries no payload
  uint32_t posted = 0;
  const Status status =
      ep_.verbs().PostRecv(std::span<const abi::RecvWorkRequest>(&wr, 1), &posted);
  return status == Status::SUCCESS || Fail(std::string("PostRecv: ") + abi::ToString(status));
}

bool Side::SendToken(const Token& token) {
  if (oob_ != nullptr) return oob_->SendValue(token, error_) || Fail(*error_);
  uint32_t got = 0;
  while (control_in_flight_ >= kControlSendRoom) {
    if (!PollBatch(size_, &got)) return false;
  }
  return PostControlSend(token);
}

bool Side::PostControlSend(const Token& token) {
  abi::SendWorkRequest wr{};
  wr.wr_id = kControlWrId;
  wr.wr_type = abi::WrType::SEND;
  wr.send_flags = abi::SendFlags::SIGNALED | abi::SendFlags::IMMEDIATE;
  wr.immediate_data = htobe32(EncodeControl(token));
  uint32_t posted = 0;
  const Status status =
      ep_.verbs().PostSend(std::span<const abi::SendWorkRequest>(&wr, 1), &posted);
  if (status != Status::SUCCESS) return Fail(std::string("PostSend: ") + abi::ToString(status));
  ++control_in_flight_;
  return true;
}

bool Side::ReceiveToken(Token* token, std::chrono::milliseconds limit) {
  if (oob_ != nullptr) return oob_->ReceiveValue(token, limit, error_) || Fail(*error_);
  const Clock::time_point until = Clock::now() + limit;
  uint32_t got = 0;
  while (tokens_.empty()) {
    if (Clock::now() > until) {
      return Fail("no word from the peer for " + std::to_string(limit.count() / 1000) + " s");
    }
    deadline_ = until + std::chrono::seconds(1);  // this loop's limit, not the data path's
    if (!PollBatch(size_, &got)) return false;
  }
  *token = tokens_.front();
  tokens_.pop_front();
  Progress();
  return true;
}

abi::SendWorkRequest Side::MakeSend(uint64_t wr_id, uint32_t size) const {
  abi::SendWorkRequest wr{};
  wr.wr_id = wr_id;
  wr.wr_type = abi::WrType::SEND;
  wr.send_flags = abi::SendFlags::SIGNALED;
  const uint8_t* source = ep_.buffer() + ep_.layout().source_offset;
  if (size <= plan_.inline_size) {
    wr.send_flags = wr.send_flags | abi::SendFlags::INLINE;
    wr.inline_length = size;
    std::memcpy(reinterpret_cast<uint8_t*>(wr.sge), source, size);
  } else {
    wr.num_sge = 1;
    wr.sge[0] = {ep_.address(ep_.layout().source_offset), size, ep_.lkey()};
  }
  if (ep_.transport() == Transport::kUd) {
    wr.av = ep_.av();
    wr.remote_qpn = ep_.peer().qpn;
    wr.remote_qkey = Endpoint::kQkey;  // the same bytes in either order
  }
  return wr;
}

abi::SendWorkRequest Side::MakeRdma(uint64_t wr_id, uint32_t size, uint64_t index) const {
  abi::SendWorkRequest wr = MakeSend(wr_id, size);
  const BufferLayout& layout = ep_.layout();
  const PeerInfo& peer = ep_.peer();
  wr.rkey = peer.rkey;
  if (IsWrite(test())) {
    wr.wr_type = abi::WrType::RDMA_WRITE;
    wr.remote_addr = peer.vaddr + layout.sink(0);
  } else if (IsRead(test())) {
    wr = abi::SendWorkRequest{};
    wr.wr_id = wr_id;
    wr.wr_type = abi::WrType::RDMA_READ;
    wr.send_flags = abi::SendFlags::SIGNALED;
    wr.num_sge = 1;
    wr.sge[0] = {ep_.address(layout.sink(0)), size, ep_.lkey()};
    wr.rkey = peer.rkey;
    wr.remote_addr = peer.vaddr + layout.source_offset;
  } else {  // atomics: the peer's sink slot 0; the original value lands in our source area
    wr = abi::SendWorkRequest{};
    wr.wr_id = wr_id;
    wr.send_flags = abi::SendFlags::SIGNALED;
    wr.num_sge = 1;
    wr.sge[0] = {ep_.address(layout.source_offset + 8 * (index % plan_.tx_depth)), 8, ep_.lkey()};
    wr.rkey = peer.rkey;
    wr.remote_addr = peer.vaddr + layout.sink(0);
    if (static_cast<AtomicType>(plan_.atomic_type) == AtomicType::kCompareSwap) {
      wr.wr_type = abi::WrType::COMPARE_SWAP;
      wr.compare_add = index;
      wr.swap = index + 1;
    } else {
      wr.wr_type = abi::WrType::FETCH_ADD;
      wr.compare_add = 1;
    }
  }
  return wr;
}

bool Side::PostRecvSlot(uint32_t slot) {
  const BufferLayout& layout = ep_.layout();
  abi::RecvWorkRequest wr{};
  wr.wr_id = slot;
  wr.num_sge = 1;
  wr.sge[0] = {ep_.address(layout.sink(slot)), static_cast<uint32_t>(layout.slot_bytes),
               ep_.lkey()};
  uint32_t posted = 0;
  const Status status =
      ep_.verbs().PostRecv(std::span<const abi::RecvWorkRequest>(&wr, 1), &posted);
  return status == Status::SUCCESS || Fail(std::string("PostRecv: ") + abi::ToString(status));
}

bool Side::PostSends(const abi::SendWorkRequest* wrs, uint32_t count) {
  uint32_t posted = 0;
  const Status status =
      ep_.verbs().PostSend(std::span<const abi::SendWorkRequest>(wrs, count), &posted);
  in_flight_ += posted;
  if (status != Status::SUCCESS) return Fail(std::string("PostSend: ") + abi::ToString(status));
  return true;
}

bool Side::PollBatch(uint32_t size, uint32_t* got) {
  *got = 0;
  uint32_t count = 0;
  const Status status = ep_.verbs().PollCq(wcs_, &count);
  if (status == Status::NOT_FOUND) {
    if (Expired())
      return Fail("no completion for " + std::to_string(limits_.timeout.count() / 1000) +
                  " s (is the peer's HCA moving data?)");
    ep_.verbs().Idle();
    return true;
  }
  if (status != Status::SUCCESS) return Fail(std::string("PollCq: ") + abi::ToString(status));
  Progress();
  const uint64_t now = NowNs();
  for (uint32_t k = 0; k < count; ++k) {
    const abi::WorkCompletion& wc = wcs_[k];
    if (wc.status != abi::WcStatus::SUCCESS) {
      return Fail(std::string("completion of wr_id ") + std::to_string(wc.wr_id) + " (" +
                  abi::ToString(wc.opcode) + "): " + abi::ToString(wc.status));
    }
    if (wc.opcode == abi::WcOpcode::RECV && abi::HasAny(wc.flags, abi::WcFlags::IMMEDIATE)) {
      // A control message: it took a data slot or a control receive; put that back.
      tokens_.push_back(DecodeControl(be32toh(wc.immediate_data)));
      if (!((wc.wr_id & kControlWrId) ? PostControlRecv(wc.wr_id)
                                      : PostRecvSlot(static_cast<uint32_t>(wc.wr_id)))) {
        return false;
      }
      continue;
    }
    if (wc.opcode != abi::WcOpcode::RECV && (wc.wr_id & kControlWrId)) {
      --control_in_flight_;
      continue;
    }
    if (wc.opcode == abi::WcOpcode::RECV) {
      const uint32_t slot = static_cast<uint32_t>(wc.wr_id);
      const uint32_t payload = wc.length - ep_.layout().grh_room;
      if (payload != size) {
        return Fail("received " + std::to_string(payload) + " bytes, expected " +
                    std::to_string(size));
      }
      if (validate() &&
          !CheckPattern(ep_.buffer() + ep_.layout().sink(slot) + ep_.layout().grh_room, size, size,
                        "received message")) {
        return false;
      }
      ++received_;
      if (!PostRecvSlot(slot)) return false;
      continue;
    }
    // A send-queue completion.
    --in_flight_;
    ++completed_;
    if (!completed_at_.empty() && wc.wr_id < completed_at_.size()) completed_at_[wc.wr_id] = now;
    if (IsAtomic(test()) && validate()) {
      uint64_t original = 0;
      std::memcpy(&original,
                  ep_.buffer() + ep_.layout().source_offset + 8 * (wc.wr_id % plan_.tx_depth), 8);
      if (original != wc.wr_id) {
        return Fail("validation: atomic " + std::to_string(wc.wr_id) + " returned " +
                    std::to_string(original) + ", expected " + std::to_string(wc.wr_id));
      }
      ++report_->validated_messages;
    }
    if (IsRead(test()) && validate() &&
        !CheckPattern(ep_.buffer() + ep_.layout().sink(0), size, size, "RDMA READ data")) {
      return false;
    }
  }
  *got = count;
  return true;
}

bool Side::WaitReceived(uint64_t target, uint32_t size) {
  uint32_t got = 0;
  while (received_ < target) {
    if (!PollBatch(size, &got)) return false;
  }
  return true;
}

bool Side::WaitSendsBelow(uint32_t limit, uint32_t size) {
  uint32_t got = 0;
  while (in_flight_ > limit) {
    if (!PollBatch(size, &got)) return false;
  }
  return true;
}

bool Side::SendLatency(uint32_t size) {
  std::vector<double> samples;
  samples.reserve(plan_.iterations);
  const abi::SendWorkRequest wr = MakeSend(0, size);
  for (uint32_t i = 0; i < plan_.iterations; ++i) {
    if (!WaitSendsBelow(plan_.tx_depth - 1, size)) return false;
    if (client_) {
      const uint64_t start = NowNs();
      if (!PostSends(&wr, 1) || !WaitReceived(i + 1, size)) return false;
      samples.push_back(static_cast<double>(NowNs() - start) / 2000.0);
    } else {
      if (!WaitReceived(i + 1, size) || !PostSends(&wr, 1)) return false;
    }
  }
  if (!WaitSendsBelow(0, size)) return false;
  if (client_) report_->latency.push_back(SummarizeLatency(size, std::move(samples)));
  report_->received_messages += received_;
  return true;
}

// perftest's write_lat: each side writes its source into the peer's sink slot 0 and polls
// the last byte of its own sink for the peer's answer.
bool Side::WriteLatency(uint32_t size) {
  std::vector<double> samples;
  samples.reserve(plan_.iterations);
  volatile uint8_t* last = ep_.buffer() + ep_.layout().sink(0) + size - 1;
  uint8_t* source_last = ep_.buffer() + ep_.layout().source_offset + size - 1;
  auto wait_for = [&](uint8_t value) {
    while (*last != value) {
      if (Expired()) return Fail("the peer's RDMA WRITE did not arrive");
      Relax();
    }
    Progress();
    return true;
  };
  for (uint32_t i = 0; i < plan_.iterations; ++i) {
    const uint8_t seq = static_cast<uint8_t>(i % 255 + 1);
    if (!WaitSendsBelow(plan_.tx_depth - 1, size)) return false;
    if (client_) {
      const uint64_t start = NowNs();
      *source_last = seq;
      abi::SendWorkRequest wr = MakeRdma(i, size, i);
      if (!PostSends(&wr, 1) || !wait_for(seq)) return false;
      samples.push_back(static_cast<double>(NowNs() - start) / 2000.0);
    } else {
      if (!wait_for(seq)) return false;
      *source_last = seq;
      abi::SendWorkRequest wr = MakeRdma(i, size, i);
      if (!PostSends(&wr, 1)) return false;
    }
  }
  if (!WaitSendsBelow(0, size)) return false;
  if (client_) report_->latency.push_back(SummarizeLatency(size, std::move(samples)));
  return true;
}

bool Side::RequestLatency(uint32_t size) {
  std::vector<double> samples;
  samples.reserve(plan_.iterations);
  for (uint32_t i = 0; i < plan_.iterations; ++i) {
    abi::SendWorkRequest wr = MakeRdma(i, size, i);
    const uint64_t start = NowNs();
    if (!PostSends(&wr, 1) || !WaitSendsBelow(0, size)) return false;
    samples.push_back(static_cast<double>(NowNs() - start) / 1000.0);
  }
  report_->latency.push_back(SummarizeLatency(size, std::move(samples)));
  return true;
}

bool Side::Bandwidth(uint32_t size) {
  const uint32_t n = plan_.iterations;
  std::vector<uint64_t> posted_at(n);
  completed_at_.assign(n, 0);
  abi::SendWorkRequest batch[kBatch];
  uint64_t posted = 0;
  completed_ = 0;
  const uint64_t start = NowNs();
  while (completed_ < n) {
    uint32_t count = 0;
    while (posted + count < n && in_flight_ + count < plan_.tx_depth && count < kBatch) {
      const uint64_t index = posted + count;
      batch[count] = IsSend(test()) ? MakeSend(index, size) : MakeRdma(index, size, index);
      ++count;
    }
    if (count > 0) {
      const uint64_t now = NowNs();
      if (!PostSends(batch, count)) return false;
      for (uint32_t k = 0; k < count; ++k) posted_at[posted + k] = now;
      posted += count;
    }
    uint32_t got = 0;
    if (!PollBatch(size, &got)) return false;
  }
  const uint64_t end = NowNs();

  BandwidthRow row;
  row.bytes = size;
  row.iterations = n;
  const double seconds = static_cast<double>(end - start) / 1e9;
  row.bw_average = static_cast<double>(size) * n / seconds / (1 << 20);
  row.msg_rate = n / seconds / 1e6;
  // Peak: the best window of W consecutive messages, from the first one's post to the
  // last one's completion (perftest's peak, in one pass).
  const uint32_t window = std::min<uint32_t>(n, std::max<uint32_t>(plan_.tx_depth, n / 16));
  row.bw_peak = row.bw_average;
  for (uint32_t i = 0; i + window <= n; ++i) {
    const uint64_t span = completed_at_[i + window - 1] - posted_at[i];
    if (span == 0 || completed_at_[i + window - 1] < posted_at[i]) continue;
    const double bw =
        static_cast<double>(size) * window / (static_cast<double>(span) / 1e9) / (1 << 20);
    row.bw_peak = std::max(row.bw_peak, bw);
  }
  completed_at_.clear();
  report_->bandwidth.push_back(row);
  return true;
}

bool Side::SendBwServer(uint32_t size) {
  // Reliable: every message arrives; unreliable (UC, UD): a message the receive queue had
  // no room for is lost, so the client's kDone ends the count after a short drain.
  Token token;
  bool peer_done = false;
  uint32_t idle = 0;
  Clock::time_point drain_until{};
  while (received_ < plan_.iterations) {
    uint32_t got = 0;
    if (!PollBatch(size, &got)) return false;
    if (got > 0) continue;
    if (!peer_done && (oob_ == nullptr || ++idle % 64 == 0) && PeerDone(&token)) {
      if (token.code != kDone) return Fail("the peer failed");
      peer_done = true;
      if (reliable() && received_ < plan_.iterations) {
        // RC: the client's completions mean every message was delivered.
        uint32_t more = 0;
        while (received_ < plan_.iterations) {
          if (!PollBatch(size, &more)) return false;
        }
      }
      drain_until = Clock::now() + std::chrono::milliseconds(200);
    }
    if (peer_done && Clock::now() > drain_until) break;
  }
  report_->received_messages += received_;
  if (!peer_done) {
    if (!ReceiveToken(&token, limits_.timeout)) return false;
    if (token.code != kDone) return Fail("the peer failed");
  }
  return SendToken(Token{kDone, 0, received_});
}

bool Side::PassiveServer(uint32_t size) {
  Token token;
  if (!ReceiveToken(&token, limits_.timeout * 10)) return false;
  if (token.code != kDone) return Fail("the peer failed");
  const uint8_t* sink = ep_.buffer() + ep_.layout().sink(0);
  if (validate() && IsWrite(test()) && !reliable()) {
    // A UC write completes at the sender once sent (IBA 9.8.2): its last packets may still
    // be on their way when the client says it is done. Wait for them (bounded).
    const auto until = Clock::now() + std::chrono::seconds(2);
    while (Clock::now() < until && !MatchesPattern(sink, size)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (validate() && IsWrite(test()) && !CheckPattern(sink, size, size, "RDMA WRITE data")) {
    return false;
  }
  if (validate() && IsAtomic(test())) {
    uint64_t value = 0;
    std::memcpy(&value, sink, 8);
    if (value != plan_.iterations) {
      return Fail("validation: the atomic target holds " + std::to_string(value) + ", expected " +
                  std::to_string(plan_.iterations));
    }
    ++report_->validated_messages;
  }
  const uint64_t checked = validate() && (IsWrite(test()) || IsAtomic(test())) ? 1 : 0;
  return SendToken(Token{kDone, 0, checked});
}

bool Side::Run(std::string* error) {
  error_ = error;
  Progress();
  const BufferLayout& layout = ep_.layout();
  const bool posts = IsSend(test()) && (client_ ? test() == TestKind::kSendLat : true);
  for (uint32_t slot = 0; posts && slot < plan_.rx_depth; ++slot) {
    if (!PostRecvSlot(slot)) return false;
  }
  // Without data receives, control messages on the QP need receives of their own.
  const uint32_t control_receives =
      oob_ != nullptr || posts ? 0 : std::min(kControlReceives, RecvQueueDepth(plan_));
  for (uint32_t i = 0; i < control_receives; ++i) {
    if (!PostControlRecv(kControlWrId | i)) return false;
  }
  for (uint32_t s = 0; s < plan_.num_sizes; ++s) {
    const uint32_t size = plan_.sizes[s];
    size_ = size;
    received_ = 0;
    completed_ = 0;
    // Each size starts from known memory: a zeroed sink (write_lat polls its last byte,
    // the server checks what arrived) and the pattern in the source.
    std::memset(ep_.buffer(), 0, layout.source_offset);
    FillSource(size);
    Token theirs;
    if (!Barrier(kReady, size, &theirs)) return false;
    Progress();
    bool ok = false;
    switch (test()) {
      case TestKind::kSendLat:
        ok = SendLatency(size);
        break;
      case TestKind::kWriteLat:
        ok = WriteLatency(size);
        break;
      case TestKind::kReadLat:
      case TestKind::kAtomicLat:
        ok = client_ ? RequestLatency(size) : PassiveServer(size);
        break;
      case TestKind::kSendBw:
        ok = client_ ? Bandwidth(size) : SendBwServer(size);
        break;
      case TestKind::kWriteBw:
      case TestKind::kReadBw:
      case TestKind::kAtomicBw:
        ok = client_ ? Bandwidth(size) : PassiveServer(size);
        break;
    }
    if (!ok) {
      // Tell the peer, best effort (on the QP only when a send fits without waiting); the
      // first error stays the one reported.
      std::string ignored;
      if (oob_ != nullptr) {
        oob_->SendValue(Token{kFailed, 0, 0}, &ignored);
      } else if (control_in_flight_ < kControlSendRoom) {
        PostControlSend(Token{kFailed, 0, 0});
      }
      return false;
    }
    const bool one_sided = !IsSend(test()) && test() != TestKind::kWriteLat;
    if (client_ && (one_sided || test() == TestKind::kSendBw)) {
      // Tell the passive server we are done and wait for its checks.
      Token answer;
      if (!SendToken(Token{kDone, 0, plan_.iterations}) ||
          !ReceiveToken(&answer, limits_.timeout * 10)) {
        return false;
      }
      if (answer.code != kDone) return Fail("the server failed (see its output)");
      if (test() == TestKind::kSendBw) {
        report_->received_messages += answer.value64;  // the server validated each of them
        if (validate()) report_->validated_messages += answer.value64;
      } else {
        report_->validated_messages += answer.value64;  // the server's check of its memory
      }
    } else if (test() == TestKind::kWriteLat || test() == TestKind::kSendLat) {
      if (!Barrier(kDone, 0, &theirs)) return false;
      if (test() == TestKind::kWriteLat && validate() &&
          !CheckPattern(ep_.buffer() + layout.sink(0), size, size - 1, "RDMA WRITE data")) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool RunPlan(Endpoint& endpoint, OobChannel* oob, const TestPlan& plan, bool client,
             const RunLimits& limits, RunReport* report, std::string* error) {
  Side side(endpoint, oob, plan, client, limits, report);
  return side.Run(error);
}

}  // namespace softib::perf
