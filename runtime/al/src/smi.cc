// The SMI on QP0 (IBA 14.2.2, as Linux's smi.c sits in front of its agents): outgoing
// directed-route SMPs get the send-side rules of runtime/smp and the permissive DLID;
// incoming SMPs get the receive-side rules, then requests for this port's SMA are answered
// by the CA's LocalMad and sent back along the return path, while responses (to the agent
// whose TID they carry) and what is for an SM (traps, SMInfo) go on to the MAD services.
#include "softib/smp/directed_route.h"

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/mad_service.h"

namespace softib::al {

using kernel::Status;

namespace {
constexpr uint16_t kAttrSmInfo = 0x0020;

smp::NodeShape Shape(const AlCa* ca) {
  return {false, static_cast<uint8_t>(ca->special_qps.size() / 2)};
}

// For an SM above the AL, not for the port's SMA: traps, reports and SMInfo.
bool ForTheSm(const uint8_t* m) {
  const uint8_t method = mad::Method(m);
  return method == mad::kMethodTrap || method == mad::kMethodTrapRepress || method == 0x06 ||
         mad::AttributeId(m) == kAttrSmInfo;
}
}  // namespace

// A directed-route SMP about to leave: HopPointer moved and the egress port checked
// (INVALID_SETTING when the path does not start at this port); it travels to the
// permissive LID while its source end is directed-routed.
Status SpecialQp::SmiPrepareSend(MadSend& send) {
  if (mad::Class(send.mad.data()) != mad::kClassSubnDr) return Status::SUCCESS;
  if (send.mad.size() != smp::kSmpBytes) return Status::INVALID_SETTING;
  // HopCount 0 is for this port's own SMA: not sent (the LocalMad verb answers it).
  if (send.mad[7] == 0) return Status::INVALID_SETTING;
  const smp::Drop drop = smp::PrepareSend(send.mad, Shape(ca_), port_);
  if (drop != smp::Drop::kNone) return Status::INVALID_SETTING;
  const uint16_t dr_slid = static_cast<uint16_t>(send.mad[32] << 8 | send.mad[33]);
  if (dr_slid == smp::kPermissiveLid) send.to.av.dlid = smp::kPermissiveLid;
  send.to.remote_qpn = 0;
  send.to.remote_qkey = 0;
  return Status::SUCCESS;
}

bool SpecialQp::SmiReceive(const uint8_t* m, const MadOrigin& origin, uint8_t* after_smi) {
  uint8_t* const smp_bytes = after_smi;
  std::memcpy(smp_bytes, m, mad::kMadSize);
  const bool directed = mad::Class(m) == mad::kClassSubnDr;
  if (directed) {
    const smp::Decision d =
        smp::OnArrival(std::span<uint8_t>(smp_bytes, mad::kMadSize), Shape(ca_), port_);
    if (d.verdict != smp::Verdict::kLocal) {  // a CA relays nothing
      dropped.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  if (mad::Method(m) == mad::kMethodTrapRepress) {
    // The SM's answer to a trap: the port's SMA stops repeating it if it was its own (the
    // SMA's TIDs are its own), and the MAD services hand it to an agent whose TID it carries.
    LocalAgent(smp_bytes, origin, LocalAnswer::kNone);
    return false;
  }
  // Responses go to their agent by TID, SM matters to the SMI-alias services.
  if (mad::IsResponse(m) || ForTheSm(m)) return false;
  if (mad::Class(m) != mad::kClassSubnLid && !directed) return false;

  LocalAgent(smp_bytes, origin, directed ? LocalAnswer::kSmaDirected : LocalAnswer::kSma);
  return true;
}

// The port's SMA or PMA answers a MAD as a CiLocalMad IRP, and the answer goes back from
// its completion: inline when the HCA completed at once, else in the completion routine
// (DISPATCH), never from a thread of its own. Stop waits for these (ci_in_flight_).
kernel::IrpTask SpecialQp::LocalAgentTask(abi::CiLocalMadIn in, MadOrigin origin,
                                          LocalAnswer answer) {
  abi::CiLocalMadOut out{};
  const Status s = co_await CiIrp(
      ca_->lower,
      kernel::BuildCiLocalMadIrp(ca_->lower, nullptr, kernel::ProcessorMode::kKernelMode, in, &out),
      &out, sizeof out);
  if (answer != LocalAnswer::kNone) {
    if (s != Status::SUCCESS) {  // M_Key violation, or nothing the agent takes
      dropped.fetch_add(1, std::memory_order_relaxed);
    } else if (answer == LocalAnswer::kPma) {
      PmaRespond(out.response, origin);
    } else {
      SmaRespond(out.response, origin, answer == LocalAnswer::kSmaDirected);
    }
  }
  ci_in_flight_.fetch_sub(1, std::memory_order_acq_rel);  // the last touch of this QP
}

void SpecialQp::LocalAgent(const uint8_t* mad, const MadOrigin& origin, LocalAnswer answer) {
  abi::CiLocalMadIn in{};
  in.port = port_;
  std::memcpy(in.request, mad, sizeof in.request);
  ci_in_flight_.fetch_add(1, std::memory_order_acq_rel);
  LocalAgentTask(in, origin, answer);
}

void SpecialQp::SmaRespond(uint8_t* response, const MadOrigin& origin, bool directed) {
  MadAddress to;
  to.av.dlid = static_cast<uint16_t>(origin.wc.slid);
  to.av.sl = origin.wc.sl;
  to.remote_qpn = 0;
  to.pkey_index = origin.wc.pkey_index;
  if (directed) {
    const smp::Decision d = smp::Respond(std::span<uint8_t>(response, mad::kMadSize), Shape(ca_),
                                         static_cast<uint16_t>(origin.wc.slid));
    if (d.verdict == smp::Verdict::kForward) {
      to.av.dlid = smp::kPermissiveLid;
    } else if (d.verdict == smp::Verdict::kForwardByLid) {
      to.av.dlid = d.lid;
    } else {
      dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  kernel::SpinLockGuard guard(lock);
  if (!stopped_) PostRawLocked(response, to);
}

bool SpecialQp::GsiLocalAgent(const uint8_t* m, const MadOrigin& origin) {
  constexpr uint8_t kClassPerfMgt = 0x04;
  if (!gsi() || mad::Class(m) != kClassPerfMgt || mad::IsResponse(m)) return false;
  LocalAgent(m, origin, LocalAnswer::kPma);  // a refused one counts as dropped there
  return true;
}

void SpecialQp::PmaRespond(const uint8_t* response, const MadOrigin& origin) {
  constexpr uint32_t kGsiQKey = 0x80010000;
  MadAddress to;
  to.av.dlid = static_cast<uint16_t>(origin.wc.slid);
  to.av.sl = origin.wc.sl;
  to.remote_qpn = origin.wc.src_qp;
  to.remote_qkey = kGsiQKey;
  to.pkey_index = origin.wc.pkey_index;
  kernel::SpinLockGuard guard(lock);
  if (!stopped_) PostRawLocked(response, to);
}

}  // namespace softib::al
