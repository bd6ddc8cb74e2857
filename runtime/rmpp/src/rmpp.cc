// RMPP state machines (rmpp.h): segmentation and the sender's window, reassembly and the
// receiver's ACKs (IBA 13.6.4, 13.6.5).
#include "softib/rmpp/rmpp.h"

#include <algorithm>
#include <cstring>

namespace softib::rmpp {

namespace {

// Bytes of RMPP data in a segment: everything after the RMPP header (class header too);
// PayloadLength counts in these (IBA 13.6.2.3).
constexpr uint32_t kRmppData = kMadSize - kHeaderEnd;

uint32_t Get32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
void Put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

void SetRmpp(uint8_t* m, uint8_t type, uint8_t flags, uint8_t status, uint32_t d1, uint32_t d2) {
  m[24] = kVersion;
  m[25] = type;
  m[26] = static_cast<uint8_t>((m[26] & 0xF8) | flags);  // RRespTime kept
  m[27] = status;
  Put32(m + 28, d1);
  Put32(m + 32, d2);
}

}  // namespace

uint32_t Segment(const uint8_t* m) { return Get32(m + 28); }
uint32_t Data2(const uint8_t* m) { return Get32(m + 32); }

uint32_t HeaderLength(uint8_t mgmt_class) {
  if (mgmt_class == 0x03) return 56;  // SubnAdm: + SA header (SM_Key, offset, mask)
  // DevMgt, DevAdm (CC), BIS: a 28-byte class header.
  if (mgmt_class == 0x06 || mgmt_class == 0x10 || mgmt_class == 0x12) return 64;
  if (mgmt_class >= 0x30 && mgmt_class <= 0x4F) return 40;  // vendor range 2: + OUI
  return kHeaderEnd;
}

void BuildControl(const uint8_t* data, uint8_t type, uint8_t status, uint32_t segment,
                  uint32_t data2, uint8_t out[kMadSize]) {
  std::memset(out, 0, kMadSize);
  std::memcpy(out, data, HeaderLength(data[1]));
  out[3] ^= 0x80;
  out[26] = 0;
  SetRmpp(out, type, kFlagActive, status, segment, data2);
}

// ------------------------------------------------------------------------------- sender

RmppSender::RmppSender(std::span<const uint8_t> transfer, uint32_t retries)
    : transfer_(transfer.begin(), transfer.end()), retries_(retries), retries_left_(retries) {
  header_ = HeaderLength(transfer_[1]);
  per_segment_ = kMadSize - header_;
  data_ = static_cast<uint32_t>(transfer_.size()) - header_;
  count_ = std::max<uint32_t>(1, (data_ + per_segment_ - 1) / per_segment_);
}

bool RmppSender::Valid(std::span<const uint8_t> transfer) {
  return transfer.size() >= kHeaderEnd && transfer.size() >= HeaderLength(transfer[1]);
}

std::vector<uint32_t> RmppSender::Sendable() {
  std::vector<uint32_t> out;
  if (failed_) return out;
  for (; next_ <= window_end(); ++next_) out.push_back(next_);
  return out;
}

void RmppSender::BuildSegment(uint32_t segment, uint8_t out[kMadSize]) const {
  std::memset(out, 0, kMadSize);
  std::memcpy(out, transfer_.data(), header_);
  const uint32_t offset = (segment - 1) * per_segment_;
  const uint32_t length = std::min(per_segment_, data_ - std::min(data_, offset));
  if (length != 0) std::memcpy(out + header_, transfer_.data() + header_ + offset, length);
  const uint32_t pad = count_ * per_segment_ - data_;
  uint8_t flags = kFlagActive;
  uint32_t payload = 0;
  if (segment == 1) {
    flags |= kFlagFirst;
    payload = count_ * kRmppData - pad;  // the whole transfer
  }
  if (segment == count_) {
    flags |= kFlagLast;
    payload = kRmppData - pad;  // what this segment holds (the whole, when it is the only one)
  }
  SetRmpp(out, kTypeData, flags, kStatusNormal, segment, payload);
}

void RmppSender::BuildAbort(uint8_t out[kMadSize]) const {
  std::memset(out, 0, kMadSize);
  std::memcpy(out, transfer_.data(), header_);
  out[26] = 0;
  SetRmpp(out, kTypeAbort, kFlagActive, abort_status_, 0, 0);
}

RmppSender::Event RmppSender::OnControl(const uint8_t* m) {
  if (failed_) return Event::kNone;
  switch (Type(m)) {
    case kTypeAck: {
      const uint32_t segment = Segment(m);
      const uint32_t window = Data2(m);
      if (segment > count_) {
        failed_ = true;
        abort_status_ = kStatusSegmentTooBig;
        return Event::kAbort;
      }
      if (window < segment) {
        failed_ = true;
        abort_status_ = kStatusWindowTooSmall;
        return Event::kAbort;
      }
      if (segment < last_ack_ || (segment == last_ack_ && window <= window_last_)) {
        return Event::kNone;  // stale or duplicate
      }
      last_ack_ = segment;
      window_last_ = std::max(window_last_, window);
      next_ = std::max(next_, segment + 1);
      retries_left_ = retries_;
      return complete() ? Event::kComplete : Event::kProgress;
    }
    case kTypeStop:
    case kTypeAbort:
      failed_ = true;
      abort_status_ = RmppStatus(m);
      return Event::kStopped;
    case kTypeData:
      return Event::kNone;  // not for a sender
    default:
      failed_ = true;
      abort_status_ = kStatusBadType;
      return Event::kAbort;
  }
}

bool RmppSender::OnTimeout() {
  if (failed_ || complete()) return !failed_;
  if (retries_left_ == 0) {
    failed_ = true;
    abort_status_ = kStatusTooManyRetries;
    return false;
  }
  --retries_left_;
  next_ = last_ack_ + 1;  // the unacknowledged part of the window again
  return true;
}

// ----------------------------------------------------------------------------- receiver

RmppReceiver::Result RmppReceiver::Abort(uint8_t status) {
  aborted_ = true;
  ahead_.clear();
  message_.clear();
  Result r;
  r.abort = true;
  r.abort_status = status;
  return r;
}

RmppReceiver::Result RmppReceiver::Ack(bool complete) {
  Result r;
  r.ack = true;
  r.ack_segment = last_;
  r.window_last = std::max(window_last_, last_);
  r.complete = complete;
  return r;
}

RmppReceiver::Result RmppReceiver::OnData(const uint8_t* m) {
  Result dropped;
  dropped.dropped = true;
  if (aborted_) return dropped;
  if (Version(m) != kVersion) return Abort(kStatusBadVersion);
  const uint32_t segment = Segment(m);
  const uint8_t flags = Flags(m);
  const bool first = (flags & kFlagFirst) != 0;
  if (segment == 0 || first != (segment == 1)) return Abort(kStatusBadFirstOrSegment);
  if (complete_) {
    if (segment <= last_) return Ack(false);  // our final ACK was lost: say it again
    return dropped;
  }
  if (!started_) {
    if (segment != 1) return Abort(kStatusBadFirstOrSegment);
    started_ = true;
    mgmt_class_ = m[1];
    message_.assign(m, m + HeaderLength(mgmt_class_));
  } else if (m[1] != mgmt_class_) {
    return dropped;
  }
  if (segment <= last_) return Ack(false);     // a duplicate: the sender may have missed our ACK
  if (segment > window_last_) return dropped;  // out of the window we gave
  if (!ahead_.emplace(segment, std::vector<uint8_t>(m, m + kMadSize)).second) return dropped;

  const uint32_t header = HeaderLength(mgmt_class_);
  const uint32_t per_segment = kMadSize - header;
  for (auto it = ahead_.find(last_ + 1); it != ahead_.end(); it = ahead_.find(last_ + 1)) {
    const uint8_t* s = it->second.data();
    uint32_t length = per_segment;
    const bool last = (Flags(s) & kFlagLast) != 0;
    if (last) {
      const uint32_t payload = Data2(s);
      // The last segment's PayloadLength: its RMPP data, at least the class header.
      const uint32_t least = header - kHeaderEnd;
      const uint32_t pad = kRmppData - std::min(payload, kRmppData);
      if (payload < least || payload > kRmppData) return Abort(kStatusBadLastOrLength);
      length = per_segment - pad;
      if (ahead_.upper_bound(it->first) != ahead_.end()) return Abort(kStatusBadLastOrLength);
    }
    message_.insert(message_.end(), s + header, s + header + length);
    ++last_;
    ahead_.erase(it);
    if (last) {
      complete_ = true;
      return Ack(true);
    }
  }
  if (last_ == window_last_) {
    window_last_ = last_ + window_;
    return Ack(false);
  }
  return Result{};
}

}  // namespace softib::rmpp
