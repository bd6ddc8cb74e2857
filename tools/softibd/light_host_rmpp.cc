#include "light_host_rmpp.h"

namespace softib::softibd {

namespace {
constexpr uint32_t kGsiQkey = 0x80010000;  // QP1's well-known Q_Key (IBA 9.6.1.1)
}  // namespace

uint64_t RmppTransfers::Tid(std::span<const uint8_t> mad) {
  uint64_t tid = 0;
  for (std::size_t i = 8; i < 16; ++i) tid = tid << 8 | mad[i];
  return tid;
}

bool RmppTransfers::Start(std::span<const uint8_t> transfer, const sm::MadAddress& to,
                          Clock::time_point now, std::vector<Segment>& out) {
  if (!rmpp::RmppSender::Valid(transfer)) return false;
  Transfer t;
  t.sender = std::make_unique<rmpp::RmppSender>(transfer, retries_);
  t.to = to;
  t.mgmt_class = transfer[1];
  t.to.length = 0;  // segments are whole MADs
  const Key key{to.lid, to.qpn, Tid(transfer)};
  transfers_.erase(key);
  Transfer& placed = transfers_.emplace(key, std::move(t)).first->second;
  ++stats_.started;
  Post(placed, now, out);
  return true;
}

bool RmppTransfers::IsControl(std::span<const uint8_t> mad) {
  // Only classes with an RMPP header (an SMP's bytes 24.. are its M_Key).
  if (mad.size() < rmpp::kMadSize || rmpp::HeaderLength(mad[1]) == rmpp::kHeaderEnd ||
      !rmpp::IsActive(mad.data()))
    return false;
  const uint8_t type = rmpp::Type(mad.data());
  return type == rmpp::kTypeAck || type == rmpp::kTypeStop || type == rmpp::kTypeAbort;
}

bool RmppTransfers::IsRequestData(std::span<const uint8_t> mad) {
  constexpr uint8_t kOnly = rmpp::kFlagActive | rmpp::kFlagFirst | rmpp::kFlagLast;
  return mad.size() >= rmpp::kMadSize && rmpp::HeaderLength(mad[1]) != rmpp::kHeaderEnd &&
         rmpp::IsActive(mad.data()) && rmpp::Type(mad.data()) == rmpp::kTypeData &&
         (mad[3] & 0x80) == 0 && rmpp::Flags(mad.data()) != kOnly;
}

bool RmppTransfers::OnRequestData(std::span<const uint8_t> mad, const sm::MadAddress& from,
                                  Clock::time_point now, std::vector<Segment>& out,
                                  std::vector<uint8_t>& request) {
  const Key key{from.lid, from.qpn, Tid(mad)};
  auto it = requests_.find(key);
  // Segment 1 of a request already whole is the request asked again (a lost final ACK
  // repeats the last unACKed segment, and segment 1 is ACKed before any other is sent).
  if (it != requests_.end() && it->second.receiver.complete() &&
      (rmpp::Flags(mad.data()) & rmpp::kFlagFirst) != 0) {
    requests_.erase(it);
    it = requests_.end();
  }
  if (it == requests_.end()) it = requests_.try_emplace(key).first;
  Request& r = it->second;
  r.forget = now + kInboundStall;
  const bool was_complete = r.receiver.complete();
  const rmpp::RmppReceiver::Result result = r.receiver.OnData(mad.data());
  if (result.ack || result.abort) {
    Segment& s = out.emplace_back();
    if (result.ack) {
      rmpp::BuildControl(mad.data(), rmpp::kTypeAck, rmpp::kStatusNormal, result.ack_segment,
                         result.window_last, s.mad.data());
    } else {
      ++stats_.request_aborts;
      rmpp::BuildControl(mad.data(), rmpp::kTypeAbort, result.abort_status, 0, 0, s.mad.data());
    }
    s.to = from;
    s.to.qkey = kGsiQkey;
    s.to.length = 0;
  }
  if (result.abort) {
    requests_.erase(it);  // the requester starts again with segment 1
    return false;
  }
  if (!result.complete || was_complete) return false;
  ++stats_.requests;
  request = r.receiver.TakeMessage();
  return true;
}

void RmppTransfers::OnControl(std::span<const uint8_t> mad, const sm::MadAddress& from,
                              Clock::time_point now, std::vector<Segment>& out) {
  const auto it = transfers_.find(Key{from.lid, from.qpn, Tid(mad)});
  if (it == transfers_.end() || mad[1] != it->second.mgmt_class) {
    ++stats_.stray_controls;
    return;
  }
  Transfer& t = it->second;
  switch (t.sender->OnControl(mad.data())) {
    case rmpp::RmppSender::Event::kNone:
      return;
    case rmpp::RmppSender::Event::kProgress:
      Post(t, now, out);
      return;
    case rmpp::RmppSender::Event::kComplete:
      ++stats_.completed;
      break;
    case rmpp::RmppSender::Event::kAbort:
      Abort(t, out);
      break;
    case rmpp::RmppSender::Event::kStopped:
      ++stats_.failed;
      break;
  }
  transfers_.erase(it);
}

void RmppTransfers::OnTimer(Clock::time_point now, std::vector<Segment>& out) {
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    Transfer& t = it->second;
    if (t.deadline > now) {
      ++it;
      continue;
    }
    ++stats_.timeouts;
    if (t.sender->OnTimeout()) {
      Post(t, now, out);
      ++it;
    } else {
      Abort(t, out);
      it = transfers_.erase(it);
    }
  }
  std::erase_if(requests_, [now](const auto& entry) { return entry.second.forget <= now; });
}

std::optional<RmppTransfers::Clock::time_point> RmppTransfers::NextDeadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& [key, t] : transfers_)
    if (!next || t.deadline < *next) next = t.deadline;
  for (const auto& [key, r] : requests_)
    if (!next || r.forget < *next) next = r.forget;
  return next;
}

// What the window allows now (after a start, an ACK that moved it, or a timeout); the next
// ACK is due ack_timeout from now.
void RmppTransfers::Post(Transfer& t, Clock::time_point now, std::vector<Segment>& out) {
  const std::vector<uint32_t> sendable = t.sender->Sendable();
  for (uint32_t n : sendable) {
    Segment& s = out.emplace_back();
    t.sender->BuildSegment(n, s.mad.data());
    s.to = t.to;
  }
  stats_.segments += sendable.size();
  t.deadline = now + ack_timeout_;
}

void RmppTransfers::Abort(Transfer& t, std::vector<Segment>& out) {
  ++stats_.failed;
  Segment& s = out.emplace_back();
  t.sender->BuildAbort(s.mad.data());
  s.to = t.to;
}

}  // namespace softib::softibd
