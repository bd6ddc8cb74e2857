// RMPP transfers on a special QP: the state machines of rmpp.h driven by sends, receives
// and the QP's timer. A sending transfer is a MadSend with an RmppSender: its segments go
// out as the window allows, each wire completion pumps it, its deadline is the ACK's (then
// the response's); a receiving one is an Inbound entry keyed by service, TID and sender.
#include <algorithm>

#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/mad_service.h"
#include "softib/rmpp/rmpp.h"

namespace softib::al {

using kernel::Status;
using Clock = std::chrono::steady_clock;

namespace {
constexpr uint32_t kAckTimeoutMs = 1000;  // a send that names no timeout
// A receiving transfer that makes no progress this long is aborted (IBA 13.6.5.3 leaves
// the value to the implementation); a complete one is kept as long for re-ACKs.
constexpr auto kInboundStall = std::chrono::seconds(10);

}  // namespace

// Posts what the window allows; a segment that finds no free slot waits for the timeout's
// retransmission.
Status SpecialQp::PostSegmentsLocked(const std::shared_ptr<MadSend>& send) {
  RmppSender& sender = *send->rmpp;
  for (uint32_t n : sender.Sendable()) {
    uint8_t segment[mad::kMadSize];
    sender.BuildSegment(n, segment);
    if (const Status s = PostLocked(send, segment, send->to); s != Status::SUCCESS) {
      sender.Unsend(n);
      return s;
    }
  }
  return Status::SUCCESS;
}

Status SpecialQp::StartRmppLocked(const std::shared_ptr<MadSend>& send, After&) {
  if (send->timeout_ms == 0) send->timeout_ms = kAckTimeoutMs;
  const Status s = PostSegmentsLocked(send);  // the first segment, or why it cannot go
  return send->on_wire != 0 ? Status::SUCCESS : s;
}

// A segment's wire completion: more of the window, or the wait for the ACK once all of it
// is out.
void SpecialQp::PumpRmppLocked(const std::shared_ptr<MadSend>& send, After&) {
  if (send->rmpp->complete() || send->rmpp->failed()) return;
  PostSegmentsLocked(send);
  if (send->on_wire == 0 && !send->waiting) Wait(send);
}

void SpecialQp::RmppTimeoutLocked(const std::shared_ptr<MadSend>& send, After& after) {
  RmppSender& sender = *send->rmpp;
  if (sender.complete()) {  // every segment ACKed, the response did not come
    Finish(send, abi::WcStatus::RESP_TIMEOUT_ERR, after);
    return;
  }
  if (!sender.OnTimeout()) {
    uint8_t abort[mad::kMadSize];
    sender.BuildAbort(abort);
    PostRawLocked(abort, send->to);
    Finish(send, abi::WcStatus::RESP_TIMEOUT_ERR, after);
    return;
  }
  retries.fetch_add(1, std::memory_order_relaxed);
  PostSegmentsLocked(send);
  if (send->on_wire == 0) Wait(send);
}

bool SpecialQp::OnRmppReceive(const uint8_t* m, const MadOrigin& origin, MadAgent* owner,
                              After& after) {
  if (rmpp::Type(m) != rmpp::kTypeData) return OnRmppControlLocked(m, after);
  // A response's segments go to the agent that asked, a request's to the class's agent.
  MadAgent* svc = mad::IsResponse(m) ? owner : FindRequestServiceLocked(m);
  if (svc == nullptr || !svc->rmpp()) return false;
  OnRmppDataLocked(m, origin, svc, after);
  return true;
}

// ACK, STOP or ABORT: for the sending transfer with that TID and class.
bool SpecialQp::OnRmppControlLocked(const uint8_t* m, After& after) {
  std::shared_ptr<MadSend> send;
  for (MadAgent* svc : services_) {
    for (auto& [id, candidate] : svc->sends) {
      if (candidate->rmpp && !candidate->done && candidate->tid == mad::Tid(m) &&
          candidate->mgmt_class == mad::Class(m)) {
        send = candidate;
      }
    }
  }
  if (!send) return false;
  RmppSender& sender = *send->rmpp;
  switch (sender.OnControl(m)) {
    case RmppSender::Event::kNone:
      break;
    case RmppSender::Event::kProgress:
      send->waiting = false;
      PostSegmentsLocked(send);
      if (send->on_wire == 0) Wait(send);
      break;
    case RmppSender::Event::kComplete:
      send->waiting = false;
      if (send->response_expected) {
        Wait(send);  // now for the response
      } else {
        Finish(send, abi::WcStatus::SUCCESS, after);
      }
      break;
    case RmppSender::Event::kAbort: {
      uint8_t abort[mad::kMadSize];
      sender.BuildAbort(abort);
      PostRawLocked(abort, send->to);
      Finish(send, abi::WcStatus::REM_ABORT_ERR, after);
      break;
    }
    case RmppSender::Event::kStopped:
      Finish(send, abi::WcStatus::REM_ABORT_ERR, after);
      break;
  }
  return true;
}

void SpecialQp::OnRmppDataLocked(const uint8_t* m, const MadOrigin& origin, MadAgent* svc,
                                 After& after) {
  const InboundKey key{svc, mad::Tid(m), uint64_t{origin.wc.slid} << 32 | origin.wc.src_qp};
  auto it = reassembly_.find(key);
  if (it == reassembly_.end()) {
    if ((rmpp::Flags(m) & rmpp::kFlagFirst) == 0) {  // a transfer we do not know (any more)
      dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Inbound inbound;
    inbound.receiver = std::make_unique<RmppReceiver>();
    inbound.from = ReturnAddress(origin);
    // A response from a redirected agent's QP: ACKs go back with the Q_Key it was sent.
    if (auto asked = mad::IsResponse(m) ? AnsweredLocked(svc, m) : nullptr) {
      inbound.from.remote_qkey = asked->to.remote_qkey;
    }
    inbound.first.assign(m, m + mad::kMadSize);
    it = reassembly_.emplace(key, std::move(inbound)).first;
  }
  Inbound& inbound = it->second;
  const RmppReceiver::Result r = inbound.receiver->OnData(m);
  if (r.dropped) dropped.fetch_add(1, std::memory_order_relaxed);
  uint8_t control[mad::kMadSize];
  if (r.ack) {
    rmpp::BuildControl(m, rmpp::kTypeAck, rmpp::kStatusNormal, r.ack_segment, r.window_last,
                       control);
    PostRawLocked(control, inbound.from);
  }
  if (r.abort) {
    rmpp::BuildControl(m, rmpp::kTypeAbort, r.abort_status, 0, 0, control);
    PostRawLocked(control, inbound.from);
    reassembly_.erase(it);
    ArmTimerLocked();
    return;
  }
  if (r.ack || !r.dropped) inbound.deadline = Clock::now() + kInboundStall;
  if (r.complete) {
    std::vector<uint8_t> message = inbound.receiver->TakeMessage();
    std::shared_ptr<MadSend> answered;
    if (mad::IsResponse(message.data())) answered = AnsweredLocked(svc, message.data());
    if (answered && OnRedirectLocked(answered, message.data(), message.size(), after)) {
      // a redirect the AL follows (mad_redirect.cc)
    } else {
      DeliverLocked(svc, std::move(message), origin, answered, after);
      if (answered) Finish(answered, abi::WcStatus::SUCCESS, after);
    }
  }
  ArmTimerLocked();
}

// Receiving transfers past their deadline: a stalled one is aborted (the sender learns it
// with status 118), a complete one forgotten.
void SpecialQp::ExpireInboundLocked(Clock::time_point now) {
  for (auto it = reassembly_.begin(); it != reassembly_.end();) {
    Inbound& inbound = it->second;
    if (inbound.deadline > now) {
      ++it;
      continue;
    }
    if (!inbound.receiver->complete()) {
      uint8_t abort[mad::kMadSize];
      rmpp::BuildControl(inbound.first.data(), rmpp::kTypeAbort, rmpp::kStatusTotalTimeTooLong, 0,
                         0, abort);
      PostRawLocked(abort, inbound.from);
      dropped.fetch_add(1, std::memory_order_relaxed);
    }
    it = reassembly_.erase(it);
  }
}

Clock::time_point SpecialQp::EarliestInboundLocked() const {
  auto earliest = Clock::time_point::max();
  for (const auto& [key, inbound] : reassembly_) earliest = std::min(earliest, inbound.deadline);
  return earliest;
}

}  // namespace softib::al
