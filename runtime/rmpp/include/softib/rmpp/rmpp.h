// RMPP (IBA 13.6): the header fields, and the sender's and receiver's state machines as
// plain classes over MAD bytes (no QP, no timer), so that tests can drive them with lost,
// duplicated and reordered segments. The AL runs them on a special QP (runtime/al
// rmpp_flow.cc), softibd's internal SM on its light host's port (tools/softibd).
//
// A transfer, as the AL's SendMad takes it and GetMadEvent gives it back, is the first segment's
// headers (common, RMPP and class headers: HeaderLength(class) bytes) followed by the whole
// data; each segment carries the same headers and the next SegmentData(class) bytes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace softib::rmpp {

inline constexpr uint8_t kVersion = 1;
inline constexpr uint8_t kTypeData = 1;
inline constexpr uint8_t kTypeAck = 2;
inline constexpr uint8_t kTypeStop = 3;
inline constexpr uint8_t kTypeAbort = 4;
inline constexpr uint8_t kFlagActive = 1;
inline constexpr uint8_t kFlagFirst = 2;
inline constexpr uint8_t kFlagLast = 4;
inline constexpr uint32_t kHeaderEnd = 36;  // common header 24 + RMPP header 12
inline constexpr uint32_t kMadSize = 256;
inline constexpr uint32_t kDefaultWindow = 16;

// RMPPStatus values (IBA 13.6.2.2, table 175).
inline constexpr uint8_t kStatusNormal = 0;
inline constexpr uint8_t kStatusResourcesExhausted = 1;
inline constexpr uint8_t kStatusTotalTimeTooLong = 118;
inline constexpr uint8_t kStatusBadLastOrLength = 119;
inline constexpr uint8_t kStatusBadFirstOrSegment = 120;
inline constexpr uint8_t kStatusBadType = 121;
inline constexpr uint8_t kStatusWindowTooSmall = 122;
inline constexpr uint8_t kStatusSegmentTooBig = 123;
inline constexpr uint8_t kStatusIllegalStatus = 124;
inline constexpr uint8_t kStatusBadVersion = 125;
inline constexpr uint8_t kStatusTooManyRetries = 126;

inline bool IsActive(const uint8_t* m) { return m[24] != 0 && (m[26] & kFlagActive) != 0; }
inline uint8_t Version(const uint8_t* m) { return m[24]; }
inline uint8_t Type(const uint8_t* m) { return m[25]; }
inline uint8_t Flags(const uint8_t* m) { return m[26] & 0x07; }
inline uint8_t RmppStatus(const uint8_t* m) { return m[27]; }
uint32_t Segment(const uint8_t* m);  // Data1: SegmentNumber (DATA, ACK)
uint32_t Data2(const uint8_t* m);    // PayloadLength (DATA) or NewWindowLast (ACK)

// Bytes of headers before a segment's data: common + RMPP + the class's own header (the SA
// header, the vendor OUI, ...), as IBA 13.6.2 and the class chapters define them.
uint32_t HeaderLength(uint8_t mgmt_class);
inline uint32_t SegmentData(uint8_t mgmt_class) { return kMadSize - HeaderLength(mgmt_class); }

// An ACK, STOP or ABORT answering `data` (a segment of the transfer): its headers up to the
// RMPP header, the R bit of the method flipped (as Linux does: an ACK of a response's data
// is a request-method MAD), then the RMPP fields.
void BuildControl(const uint8_t* data, uint8_t type, uint8_t status, uint32_t segment,
                  uint32_t data2, uint8_t out[kMadSize]);

// The sending side of one transfer. The caller posts what Sendable() names, feeds ACKs,
// STOPs and ABORTs to OnControl, and calls OnTimeout when the ACK did not come.
class RmppSender {
 public:
  enum class Event {
    kNone,      // nothing changed (a stale or duplicate ACK)
    kProgress,  // the window moved: more segments may be sendable
    kComplete,  // every segment ACKed
    kAbort,     // send an ABORT with abort_status(), then the transfer failed
    kStopped,   // the receiver sent STOP or ABORT: the transfer failed
  };

  // `transfer`: headers (HeaderLength of its class) then data; `retries`: timeouts allowed
  // in a row without progress.
  RmppSender(std::span<const uint8_t> transfer, uint32_t retries);
  static bool Valid(std::span<const uint8_t> transfer);

  uint32_t segment_count() const { return count_; }
  uint32_t last_acked() const { return last_ack_; }
  uint32_t window_last() const { return window_last_; }
  bool complete() const { return last_ack_ == count_; }
  bool failed() const { return failed_; }
  uint8_t abort_status() const { return abort_status_; }

  // The segments to post now (each once, until a timeout rewinds), in order.
  std::vector<uint32_t> Sendable();
  bool AllSentInWindow() const { return next_ == window_end() + 1; }
  void BuildSegment(uint32_t segment, uint8_t out[rmpp::kMadSize]) const;
  // The segments from `segment` on could not be posted: sendable again.
  void Unsend(uint32_t segment) { next_ = segment < next_ ? segment : next_; }
  // The sender's ABORT (abort_status()) to the receiver: the transfer's headers, type ABORT.
  void BuildAbort(uint8_t out[rmpp::kMadSize]) const;
  Event OnControl(const uint8_t* mad);
  // No ACK in time: false when the retries are used up (send an ABORT with
  // kStatusTooManyRetries), else the unacknowledged window is sendable again.
  bool OnTimeout();

 private:
  uint32_t window_end() const { return window_last_ < count_ ? window_last_ : count_; }

  std::vector<uint8_t> transfer_;
  uint32_t header_ = 0, per_segment_ = 0, data_ = 0, count_ = 0;
  uint32_t last_ack_ = 0, window_last_ = 1, next_ = 1;
  uint32_t retries_, retries_left_;
  bool failed_ = false;
  uint8_t abort_status_ = 0;
};

// The receiving side of one transfer: segments in any order within the window, kept until
// they are contiguous; an ACK when the window's last segment or the transfer's last one
// arrives (and again for a duplicate, so a lost ACK is repaired).
class RmppReceiver {
 public:
  struct Result {
    bool ack = false;  // send an ACK(ack_segment, window_last)
    uint32_t ack_segment = 0, window_last = 0;
    bool abort = false;  // send an ABORT with abort_status; the transfer is over
    uint8_t abort_status = 0;
    bool complete = false;  // the message is whole (TakeMessage)
    bool dropped = false;   // the segment was not used
  };

  explicit RmppReceiver(uint32_t window = rmpp::kDefaultWindow) : window_(window) {}
  // A DATA segment of this transfer (the first one creates it).
  Result OnData(const uint8_t* mad);
  bool complete() const { return complete_; }
  bool aborted() const { return aborted_; }
  std::vector<uint8_t> TakeMessage() { return std::move(message_); }
  uint32_t last_acked() const { return last_; }

 private:
  Result Abort(uint8_t status);
  Result Ack(bool complete);

  const uint32_t window_;
  bool started_ = false, complete_ = false, aborted_ = false;
  uint8_t mgmt_class_ = 0;
  uint32_t last_ = 0;                               // last segment received in order
  uint32_t window_last_ = 1;                        // the window the sender was given
  std::map<uint32_t, std::vector<uint8_t>> ahead_;  // segments past last_+1, in the window
  std::vector<uint8_t> message_;
};

}  // namespace softib::rmpp
