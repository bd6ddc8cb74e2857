// Wire format of the user<->kernel channel (see runtime/channel/PROTOCOL.md). One
// AF_UNIX SOCK_SEQPACKET connection per open file; every datagram is one frame: a fixed
// header followed by payload bytes. Only fixed-width fields, at naturally aligned offsets,
// so a 32-bit process and the 64-bit kernel agree on every byte.
#pragma once

#include <cstddef>
#include <cstdint>

namespace softib::channel {

inline constexpr uint32_t kFrameMagic = 0x43424953;  // "SIBC" little-endian
inline constexpr uint16_t kProtocolVersion = 1;

// Bounds that keep every allocation on either side small and fixed: the largest IOCTL is a
// whole RMPP transfer (MAX_RMPP_DATA, 128 KiB) behind its verb's structure (SendMad,
// GetMadEvent), so 132 KiB each way. A frame must also fit one SEQPACKET message, which
// Linux bounds by the socket's send buffer (wmem_default, 208 KiB on Debian).
inline constexpr uint32_t kMaxInputBytes = 132 * 1024;
inline constexpr uint32_t kMaxOutputBytes = 132 * 1024;
inline constexpr uint32_t kMaxFdsPerResponse = 8;
// Requests one file may have outstanding; more are answered INSUFFICIENT_RESOURCES.
inline constexpr uint32_t kMaxOutstandingPerFile = 4096;
// Responses the server keeps for a client that does not read; past this it stops reading
// that client's requests until the queue drained (backpressure, bounded memory).
inline constexpr uint32_t kMaxQueuedResponses = 256;

enum class FrameKind : uint16_t {
  kIoctl = 1,   // request: an IOCTL with input; response: its completion
  kCancel = 2,  // request only: cancel request_id (or all, kCancelAll); never answered
  kClose = 3,   // request: close the file; response: the file is closed (last frame)
  kReject = 4,  // response only: the request frame was malformed (see RejectReason)
};

// RequestHeader.flags
inline constexpr uint32_t kCancelAll = 1u << 0;  // kCancel: every outstanding request
// ResponseHeader.flags
inline constexpr uint32_t kResponseHasFds = 1u << 0;  // SCM_RIGHTS fds ride with this frame

struct RequestHeader {
  uint32_t magic;          // kFrameMagic
  uint16_t version;        // kProtocolVersion
  uint16_t kind;           // FrameKind
  uint64_t request_id;     // chosen by the client, unique among its outstanding requests, != 0
  uint32_t ioctl_code;     // kIoctl only, else 0
  uint32_t input_length;   // bytes after the header; the datagram is header + input exactly
  uint32_t output_length;  // most output bytes the client accepts (kIoctl only)
  uint32_t flags;          // kCancelAll for kCancel; else 0
};
static_assert(sizeof(RequestHeader) == 32);
static_assert(offsetof(RequestHeader, magic) == 0);
static_assert(offsetof(RequestHeader, version) == 4);
static_assert(offsetof(RequestHeader, kind) == 6);
static_assert(offsetof(RequestHeader, request_id) == 8);
static_assert(offsetof(RequestHeader, ioctl_code) == 16);
static_assert(offsetof(RequestHeader, input_length) == 20);
static_assert(offsetof(RequestHeader, output_length) == 24);
static_assert(offsetof(RequestHeader, flags) == 28);

struct ResponseHeader {
  uint32_t magic;          // kFrameMagic
  uint16_t version;        // kProtocolVersion
  uint16_t kind;           // FrameKind: kIoctl, kClose or kReject
  uint64_t request_id;     // the request answered (0 when a rejected frame had none readable)
  uint32_t status;         // abi::Status
  uint32_t information;    // output bytes after the header (<= the request's output_length)
  uint32_t flags;          // kResponseHasFds
  uint32_t reject_reason;  // RejectReason for kReject, else 0
};
static_assert(sizeof(ResponseHeader) == 32);
static_assert(offsetof(ResponseHeader, magic) == 0);
static_assert(offsetof(ResponseHeader, version) == 4);
static_assert(offsetof(ResponseHeader, kind) == 6);
static_assert(offsetof(ResponseHeader, request_id) == 8);
static_assert(offsetof(ResponseHeader, status) == 16);
static_assert(offsetof(ResponseHeader, information) == 20);
static_assert(offsetof(ResponseHeader, flags) == 24);
static_assert(offsetof(ResponseHeader, reject_reason) == 28);

inline constexpr uint32_t kMaxRequestFrameBytes = sizeof(RequestHeader) + kMaxInputBytes;
inline constexpr uint32_t kMaxResponseFrameBytes = sizeof(ResponseHeader) + kMaxOutputBytes;

// Why the server rejected a request frame. The connection stays usable after any of them.
enum class RejectReason : uint32_t {
  kNone = 0,
  kShortFrame = 1,  // fewer bytes than a RequestHeader
  kBadMagic = 2,
  kBadVersion = 3,
  kBadKind = 4,
  kFrameTooLong = 5,    // longer than kMaxRequestFrameBytes (truncated on receipt)
  kLengthMismatch = 6,  // datagram size != header + input_length
  kInputTooLong = 7,    // input_length > kMaxInputBytes
  kOutputTooLong = 8,   // output_length > kMaxOutputBytes
  kBadFlags = 9,        // flag bits not defined for the kind
  kBadRequestId = 10,   // 0, or equal to an outstanding request's id
  kUnexpectedFds = 11,  // the client sent file descriptors (they are closed)
  kBadField = 12,       // a field that must be 0 for the kind is not
};

const char* RejectReasonName(RejectReason reason);

// Checks a received request datagram of `size` bytes (`truncated` when it exceeded the
// receive buffer). kNone when valid; the request-id uniqueness is the server's to check.
RejectReason ValidateRequest(const void* datagram, size_t size, bool truncated);

}  // namespace softib::channel
