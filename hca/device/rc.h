// Reliable Connected transport state (IBA 9.7): what the requester, the responder and the
// completer of one RC QP remember between packets. Time is the HCA's injected clock
// (nanoseconds, advanced by Hca::Tick), so every timer is deterministic in tests.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "hca/device/sgl.h"
#include "softib/abi/types.h"

namespace softib::hca {

inline constexpr uint32_t kPsnModulo = 1u << 24;
// The largest message IBA allows (2^31 bytes).
inline constexpr uint64_t kMaxMessageBytes = 1ull << 31;

// a - b as a signed distance in the 24-bit PSN space (IBA 9.7.1: PSNs wrap).
inline int32_t PsnDiff(uint32_t a, uint32_t b) { return static_cast<int32_t>((a - b) << 8) >> 8; }
inline uint32_t PsnAdd(uint32_t psn, uint32_t n) { return (psn + n) & (kPsnModulo - 1); }

// AETH:Syndrome (IBA 9.7.5.1, table 44): bits 7..5 the kind, bits 4..0 its value.
namespace aeth {
inline constexpr uint8_t kAck = 0x00;     // value: credit count
inline constexpr uint8_t kRnrNak = 0x20;  // value: RNR timer code
inline constexpr uint8_t kNak = 0x60;     // value: NAK code below
inline constexpr uint8_t kKindMask = 0xE0;
inline constexpr uint8_t kValueMask = 0x1F;
inline constexpr uint8_t kInvalidCredits = 0x1F;  // no end-to-end credit information
inline constexpr uint8_t kNakPsnSequence = 0;
inline constexpr uint8_t kNakInvalidRequest = 1;
inline constexpr uint8_t kNakRemoteAccess = 2;
inline constexpr uint8_t kNakRemoteOperational = 3;
}  // namespace aeth

// RNR NAK timer code → nanoseconds (IBA 9.7.5.2.8, table 45).
uint64_t RnrTimerNs(uint8_t code);
// Local ACK timeout 4.096 µs · 2^t; 0 means "wait forever" (IBA 9.7.6.1.3).
uint64_t AckTimeoutNs(uint8_t timeout);

// A send work request on an RC send queue, from posting until its completion is written.
struct RcSendWqe {
  abi::SendWorkRequest wr{};
  bool type1_bind = false;  // a BindMw verb's bind (wr.bind_rkey: the key it will give)
  uint64_t total = 0;       // message bytes (atomics: 8)
  bool started = false;     // PSNs assigned, first transmission done
  uint32_t first_psn = 0;   // valid once started
  uint32_t num_psns = 0;    // PSNs the message consumes (reads: one per response packet)
  uint32_t responses = 0;   // read response packets accepted
  bool done = false;        // ready to retire, with `status`
  abi::WcStatus status = abi::WcStatus::SUCCESS;

  uint32_t last_psn() const { return PsnAdd(first_psn, num_psns - 1); }
  bool IsReadOrAtomic() const {
    return wr.wr_type == abi::WrType::RDMA_READ || wr.wr_type == abi::WrType::COMPARE_SWAP ||
           wr.wr_type == abi::WrType::FETCH_ADD;
  }
};

struct RcRequester {
  std::deque<RcSendWqe> wqes;  // [0, next) started, oldest first; the rest waiting
  std::size_t next = 0;
  bool stopped = false;  // a local error was found: nothing more goes out
  uint8_t retry_left = 0;
  uint8_t rnr_retry_left = 0;
  uint64_t ack_deadline = 0;  // 0: local ACK timer not running
  uint64_t rnr_deadline = 0;  // 0: not waiting out an RNR NAK
  uint32_t rnr_psn = 0;       // where to resume after the RNR wait
  // The PSN the last NAK- or response-triggered retransmission started from; a second
  // trigger for the same PSN without progress in between is ignored, so one lost packet
  // does not multiply into a burst of retransmissions.
  std::optional<uint32_t> retried_from;
};

// A read or atomic the responder executed, kept to answer its duplicates (IBA 9.7.5.1.3).
struct RcResponderResource {
  uint32_t psn = 0;
  bool atomic = false;
  uint64_t original = 0;  // atomics: the value returned the first time
};

struct RcResponder {
  uint32_t msn = 0;       // messages completed (AETH:MSN)
  bool nak_sent = false;  // a sequence or RNR NAK is outstanding for rq_psn
  // The message being received: which kind, and how far.
  enum class Kind : uint8_t { kNone, kSend, kWrite } in_progress = Kind::kNone;
  uint64_t offset = 0;
  // kSend: the receive it lands in (taken off the RQ at the first packet).
  std::optional<abi::RecvWorkRequest> recv;
  std::vector<ScatterSegment> plan;
  // kWrite: the target from the first packet's RETH.
  uint64_t write_va = 0;
  uint32_t write_rkey = 0;
  uint32_t write_length = 0;
  // Part of this message's staged payload could not be placed (write_combiner.h): the
  // message ends in a remote access NAK, as an unplaceable packet would have.
  bool placement_failed = false;
  std::deque<RcResponderResource> resources;
};

// Where a SEND / RDMA WRITE / READ / atomic request packet sits in its message (IBA
// 9.7.5.1.5, the opcode sequence). UC opcodes are the RC ones plus 0x20 (IBA 9.2.1).
struct RequestShape {
  RcResponder::Kind kind = RcResponder::Kind::kNone;  // kNone: read or atomic
  bool first = false, last = false, immediate = false, invalidate = false;
  bool known = true;  // false: not a request opcode of the RC transport
};
RequestShape ShapeOf(uint8_t rc_opcode);

struct RcState {
  RcRequester req;
  RcResponder resp;
};

}  // namespace softib::hca
