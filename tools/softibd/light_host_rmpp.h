// RMPP for softibd's internal SM (IBA 13.6), with the AL's state machines
// (softib/rmpp/rmpp.h): the SA's GetTable/GetMulti answers sent as DATA segments, each
// transfer with its window, ACKs, ACK timeout and retries; and requests that come as RMPP
// DATA reassembled (and ACKed) before the SM sees them, as the AL's MadPort does. Plain
// class, clock passed in: the light host's MadPort runs it on the SM's thread (sends at the
// next wait, ACKs and segments taken from what arrives, timeouts from its Receive loop),
// and tests drive it with lost ACKs.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "softib/rmpp/rmpp.h"
#include "softib/sm/mad_port.h"

namespace softib::softibd {

class RmppTransfers {
 public:
  using Clock = std::chrono::steady_clock;
  struct Segment {
    sm::MadBytes mad;
    sm::MadAddress to;
  };
  struct Stats {
    uint64_t started = 0, completed = 0, failed = 0;
    uint64_t segments = 0, timeouts = 0;
    uint64_t stray_controls = 0;                // ACK/STOP/ABORT of no transfer in flight
    uint64_t requests = 0, request_aborts = 0;  // RMPP requests whole / aborted
  };

  RmppTransfers(std::chrono::milliseconds ack_timeout, uint32_t retries)
      : ack_timeout_(ack_timeout), retries_(retries) {}

  // Starts sending `transfer` (class headers, then the data) to `to`; its first segments
  // go to `out`. A transfer to the same requester with the same TID replaces the old one
  // (the requester asked again). false: not a transfer (shorter than its headers).
  bool Start(std::span<const uint8_t> transfer, const sm::MadAddress& to, Clock::time_point now,
             std::vector<Segment>& out);
  // Whether `mad` is an RMPP ACK, STOP or ABORT (never for the SM): it is used by the
  // transfer it names (the window moves, it ends, or an ABORT answers a bad ACK), else
  // dropped.
  static bool IsControl(std::span<const uint8_t> mad);
  void OnControl(std::span<const uint8_t> mad, const sm::MadAddress& from, Clock::time_point now,
                 std::vector<Segment>& out);
  // Whether `mad` is a DATA segment of an RMPP request (the R bit clear) of more than one
  // segment. A request that is one segment (First and Last) goes to the SM as it is, as it
  // always did, unACKed: requesters over umad2sim do no RMPP, and an AL requester that did
  // not send it as a transfer would take an ACK (same TID, R bit set) for the answer.
  static bool IsRequestData(std::span<const uint8_t> mad);
  // Such a segment from `from`: its ACK (or ABORT) goes to `out`; true once the request is
  // whole, in `request` (headers, then the whole data). Later segments of a whole request
  // are ACKed again, not delivered again; its segment 1 starts it anew.
  bool OnRequestData(std::span<const uint8_t> mad, const sm::MadAddress& from,
                     Clock::time_point now, std::vector<Segment>& out,
                     std::vector<uint8_t>& request);
  // Transfers whose ACK is overdue: their unacknowledged window again, or an ABORT
  // (TooManyRetries) when the retries are used up. Requests idle for kInboundStall are
  // forgotten (an unfinished one dropped, a whole one no longer re-ACKed).
  void OnTimer(Clock::time_point now, std::vector<Segment>& out);
  // When OnTimer next has something to do.
  std::optional<Clock::time_point> NextDeadline() const;

  std::size_t in_flight() const { return transfers_.size(); }
  std::size_t requests_kept() const { return requests_.size(); }
  // As the AL's receiver (rmpp_flow.cc): no progress this long ends a request's transfer.
  static constexpr std::chrono::seconds kInboundStall{10};
  const Stats& stats() const { return stats_; }

 private:
  // A transfer is named by its requester and TID (the ACKs carry the TID back).
  using Key = std::tuple<uint16_t, uint32_t, uint64_t>;
  struct Transfer {
    std::unique_ptr<rmpp::RmppSender> sender;
    sm::MadAddress to;
    uint8_t mgmt_class = 0;
    Clock::time_point deadline;
  };
  struct Request {
    rmpp::RmppReceiver receiver;
    Clock::time_point forget;  // kInboundStall after the last segment
  };
  static uint64_t Tid(std::span<const uint8_t> mad);
  void Post(Transfer& t, Clock::time_point now, std::vector<Segment>& out);
  void Abort(Transfer& t, std::vector<Segment>& out);

  const std::chrono::milliseconds ack_timeout_;
  const uint32_t retries_;
  std::map<Key, Transfer> transfers_;
  std::map<Key, Request> requests_;
  Stats stats_;
};

}  // namespace softib::softibd
