#include "softib/channel/protocol.h"

#include <cstring>

namespace softib::channel {

const char* RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kShortFrame:
      return "frame shorter than its header";
    case RejectReason::kBadMagic:
      return "bad magic";
    case RejectReason::kBadVersion:
      return "unsupported protocol version";
    case RejectReason::kBadKind:
      return "unknown frame kind";
    case RejectReason::kFrameTooLong:
      return "frame longer than the protocol maximum";
    case RejectReason::kLengthMismatch:
      return "input_length disagrees with the frame size";
    case RejectReason::kInputTooLong:
      return "input_length over the maximum";
    case RejectReason::kOutputTooLong:
      return "output_length over the maximum";
    case RejectReason::kBadFlags:
      return "undefined flag bits";
    case RejectReason::kBadRequestId:
      return "request id 0 or already outstanding";
    case RejectReason::kUnexpectedFds:
      return "file descriptors sent to the kernel";
    case RejectReason::kBadField:
      return "field must be 0 for this frame kind";
  }
  return "unknown reject reason";
}

RejectReason ValidateRequest(const void* datagram, size_t size, bool truncated) {
  if (truncated || size > kMaxRequestFrameBytes) return RejectReason::kFrameTooLong;
  if (size < sizeof(RequestHeader)) return RejectReason::kShortFrame;
  RequestHeader h;
  std::memcpy(&h, datagram, sizeof h);
  if (h.magic != kFrameMagic) return RejectReason::kBadMagic;
  if (h.version != kProtocolVersion) return RejectReason::kBadVersion;
  if (h.request_id == 0) return RejectReason::kBadRequestId;
  switch (static_cast<FrameKind>(h.kind)) {
    case FrameKind::kIoctl:
      if (h.input_length > kMaxInputBytes) return RejectReason::kInputTooLong;
      if (h.output_length > kMaxOutputBytes) return RejectReason::kOutputTooLong;
      if (h.flags != 0) return RejectReason::kBadFlags;
      break;
    case FrameKind::kCancel:
      if (h.flags & ~kCancelAll) return RejectReason::kBadFlags;
      if (h.ioctl_code != 0 || h.input_length != 0 || h.output_length != 0) {
        return RejectReason::kBadField;
      }
      break;
    case FrameKind::kClose:
      if (h.flags != 0) return RejectReason::kBadFlags;
      if (h.ioctl_code != 0 || h.input_length != 0 || h.output_length != 0) {
        return RejectReason::kBadField;
      }
      break;
    default:
      return RejectReason::kBadKind;
  }
  if (size != sizeof(RequestHeader) + h.input_length) return RejectReason::kLengthMismatch;
  return RejectReason::kNone;
}

}  // namespace softib::channel
