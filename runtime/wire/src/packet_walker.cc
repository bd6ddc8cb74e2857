#include "softib/wire/packet_walker.h"

namespace softib::wire {

const char* ToString(WalkProblem problem) {
  switch (problem) {
    case WalkProblem::kNone:
      return "none";
    case WalkProblem::kTooShort:
      return "too short";
    case WalkProblem::kBadLinkVersion:
      return "bad LRH:LVer";
    case WalkProblem::kPktLenMismatch:
      return "LRH:PktLen disagrees with the packet's size";
    case WalkProblem::kNotIbaTransport:
      return "not an IBA transport packet (LRH:LNH raw or IPv6)";
    case WalkProblem::kBadGrh:
      return "bad GRH (IPVer, NxtHdr or PayLen)";
    case WalkProblem::kBadTransportVersion:
      return "bad BTH:TVer";
    case WalkProblem::kUnknownOpcode:
      return "unknown BTH:OpCode";
    case WalkProblem::kUnexpectedPayload:
      return "payload on an opcode without one";
    case WalkProblem::kBadPadCnt:
      return "bad BTH:PadCnt";
  }
  return "?";
}

}  // namespace softib::wire
