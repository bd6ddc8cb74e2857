// The switch relay: LID-routed packets by the LFT (unicast) or the MFT (multicast LIDs
// 0xC000-0xFFFE), VL15 SMPs for this switch to its SMI (directed-route rules of
// runtime/smp, then the SMA on port 0), and the routing of the SMA's responses. Packets the
// switch passes on unchanged keep their ICRC and VCRC; an SMP it rewrites (hop pointer,
// return path, LRH LIDs of a LID-routed segment) gets both rebuilt.
#include <algorithm>

#include "softib/fabric/switch.h"
#include "softib/mad/mad_common.h"
#include "softib/wire/ib_crc.h"
#include "softib/wire/packet_walker.h"
#include "softib/wire/wire.h"

namespace softib::fabric {
namespace {

constexpr std::size_t kMadOffset = wire::LRH::kSize + wire::BTH::kSize + wire::DETH::kSize;
constexpr std::size_t kCrcBytes = ibcrc::kIcrcBytes + ibcrc::kVcrcBytes;
constexpr std::size_t kSmpPacketBytes = kMadOffset + smp::kSmpBytes + kCrcBytes;
constexpr uint16_t kFirstMulticastLid = 0xC000;
constexpr uint16_t kPermissiveLid = 0xFFFF;
constexpr uint8_t kVl15 = 15;
constexpr uint8_t kMaxLftPort = 0xFE;

void RebuildCrcs(std::vector<uint8_t>& packet) {
  packet.resize(packet.size() - kCrcBytes);
  ibcrc::AppendCrcs(packet);
}

std::span<uint8_t> MadOf(std::vector<uint8_t>& packet) {
  return std::span<uint8_t>(packet).subspan(kMadOffset, smp::kSmpBytes);
}

}  // namespace

RouteResult Switch::Drop(SwitchDrop why, uint8_t ingress) {
  ++drops_[static_cast<std::size_t>(why)];
  if (ingress <= config_.num_ports) {
    if (why == SwitchDrop::kUnprogrammedLid) ++counters_[ingress].rcv_switch_relay_errors;
    if (why == SwitchDrop::kMalformed || why == SwitchDrop::kBadCrc)
      ++counters_[ingress].rcv_errors;
  }
  RouteResult result;
  result.drop = why;
  return result;
}

bool Switch::IsOwnLid(uint16_t lid) const {
  const mad::PortInfo& pi = ports_[0].info;
  if (pi.LID == 0 || lid >= kFirstMulticastLid) return false;
  return (lid >> pi.LMC) == (pi.LID >> pi.LMC);
}

// VL15 may leave on any port whose link is up (Init, Armed, Active); data needs Active.
bool Switch::CanTransmit(uint8_t port, bool vl15) const {
  if (port == 0) return true;
  const uint8_t state = ports_[port].info.PortState;
  return vl15 ? state != static_cast<uint8_t>(mad::PortState::DOWN)
              : state == static_cast<uint8_t>(mad::PortState::ACTIVE);
}

std::optional<uint8_t> Switch::UnicastPort(uint16_t dlid, SwitchDrop* why) const {
  *why = SwitchDrop::kUnprogrammedLid;
  if (dlid > switch_info_.LinearFDBTop || dlid >= lft_.size()) return std::nullopt;
  const uint8_t port = lft_[dlid];
  if (port > config_.num_ports || port > kMaxLftPort) return std::nullopt;
  return port;
}

RouteResult Switch::route(uint8_t ingress, std::span<const uint8_t> packet, bool intact) {
  if (ingress > config_.num_ports) return Drop(SwitchDrop::kMalformed, ingress);
  // A switch reads the LRH and, of an IBA transport packet, the BTH (P_Key, QP0): the walk to
  // the BTH. Raw packets (LNH 0/1) are relayed by their LRH alone, which must be sound (the
  // tolerant walk checks a raw packet's length too); the transport headers after the BTH are
  // the end node's to check.
  const wire::PacketLayout layout =
      wire::WalkPacket(packet, {.depth = wire::WalkDepth::kBth, .mode = wire::WalkMode::kTolerant});
  for (const wire::WalkFinding& f : layout.all_findings())
    if (f.problem != wire::WalkProblem::kNotIbaTransport)
      return Drop(SwitchDrop::kMalformed, ingress);
  const bool iba = layout.has(wire::Header::kBth);
  const wire::LRHConstView lrh(packet);
  ++counters_[ingress].rcv_packets;
  const uint16_t dlid = lrh.DLID();
  const wire::LinkNextHeader lnh = layout.lnh;
  const std::size_t bth_offset = layout.offset(wire::Header::kBth);

  if (lrh.VL() == kVl15) {
    if (!CanTransmit(ingress, true)) return Drop(SwitchDrop::kIngressNotActive, ingress);
    // Only SMPs travel on VL15: UD SEND to QP0, no GRH, a whole 256-byte MAD.
    if (lnh != wire::LinkNextHeader::IBA_LOCAL || packet.size() != kSmpPacketBytes)
      return Drop(SwitchDrop::kVl15NotSmp, ingress);
    const wire::BTHConstView bth(packet.subspan(bth_offset));
    if (bth.OpCode() != static_cast<uint8_t>(wire::BthOpcode::UD_SEND_ONLY) || bth.DestQP() != 0)
      return Drop(SwitchDrop::kVl15NotSmp, ingress);
    if (dlid == kPermissiveLid || IsOwnLid(dlid)) return RouteSmpToSmi(ingress, packet, intact);
    return RouteByLid(ingress, dlid, true, {});
  }

  if (!CanTransmit(ingress, false)) return Drop(SwitchDrop::kIngressNotActive, ingress);
  if (iba && wire::BTHConstView(packet.subspan(bth_offset)).DestQP() == 0)
    return Drop(SwitchDrop::kVl15NotSmp, ingress);  // QP0 traffic is VL15 only
  if (dlid == 0 || dlid == kPermissiveLid) return Drop(SwitchDrop::kReservedLid, ingress);
  // Raw packets carry no P_Key; IBA packets are checked where the ports enforce partitions.
  const uint16_t pkey = iba ? wire::BTHConstView(packet.subspan(bth_offset)).P_Key() : 0xFFFF;
  if (iba && !PKeyAllowed(ingress, pkey, true, packet))
    return Drop(SwitchDrop::kPartition, ingress);
  if (dlid < kFirstMulticastLid)
    return EnforceOutbound(RouteByLid(ingress, dlid, false, {}), pkey, ingress, packet);

  const std::size_t index = dlid - kFirstMulticastLid;
  if (index >= config_.multicast_fdb_cap) return Drop(SwitchDrop::kUnprogrammedLid, ingress);
  RouteResult result;
  bool any_member = false;
  for (unsigned port = 1; port <= config_.num_ports; ++port) {
    const uint16_t mask = mft_[index * mft_positions_ + port / 16];
    if ((mask & (1u << (port % 16))) == 0 || port == ingress) continue;
    any_member = true;
    if (CanTransmit(static_cast<uint8_t>(port), false)) {
      result.egress.push_back(static_cast<uint8_t>(port));
    } else {
      ++counters_[port].xmit_discards;
    }
  }
  if (result.egress.empty())
    return Drop(any_member ? SwitchDrop::kEgressNotActive : SwitchDrop::kUnprogrammedLid, ingress);
  return EnforceOutbound(std::move(result), pkey, ingress, packet);
}

RouteResult Switch::RouteByLid(uint8_t ingress, uint16_t dlid, bool vl15,
                               std::vector<uint8_t> bytes) {
  std::optional<uint8_t> port = 0;
  if (!IsOwnLid(dlid)) {
    SwitchDrop why;
    port = UnicastPort(dlid, &why);
    if (!port) return Drop(why, ingress);
  }
  if (*port == 0 && !vl15) return Drop(SwitchDrop::kNoAgent, ingress);
  if (!CanTransmit(*port, vl15)) {
    ++counters_[*port].xmit_discards;
    return Drop(SwitchDrop::kEgressNotActive, ingress);
  }
  RouteResult result;
  result.egress.push_back(*port);
  result.rewritten = std::move(bytes);
  return result;
}

RouteResult Switch::RouteSmpToSmi(uint8_t ingress, std::span<const uint8_t> packet, bool intact) {
  // The switch consumes or rewrites this packet: check its CRCs first, so that a corrupted
  // SMP is not given fresh ones — unless they were built over these very bytes (Receive).
  if (!intact) {
    const ibcrc::CrcCheck crcs = ibcrc::CheckCrcs(packet);
    if (!crcs.well_formed || !crcs.icrc_ok() || !crcs.vcrc_ok())
      return Drop(SwitchDrop::kBadCrc, ingress);
  }
  if (mad::MadHeaderConstView(packet.subspan(kMadOffset, smp::kSmpBytes)).MgmtClass() !=
      mad::kSubnMgtDRClass) {
    RouteResult result;
    result.egress.push_back(0);  // a LID-routed SMP for this switch's SMA, as it came
    return result;
  }
  std::vector<uint8_t> bytes(packet.begin(), packet.end());  // the relay rewrites it
  const std::span<uint8_t> mad = MadOf(bytes);
  const smp::Decision decision = smp::OnArrival(mad, shape(), ingress);
  switch (decision.verdict) {
    case smp::Verdict::kLocal: {
      RouteResult result;  // for the SMA only: its answer gets CRCs (AnswerSmp)
      result.egress.push_back(0);
      result.rewritten = std::move(bytes);
      return result;
    }
    case smp::Verdict::kForward: {
      if (!CanTransmit(decision.port, true)) {
        ++counters_[decision.port].xmit_discards;
        return Drop(SwitchDrop::kEgressNotActive, ingress);
      }
      // On the directed-route part every hop's SMI must see it: permissive LIDs (it may
      // have arrived here addressed to this switch's LID over a LID-routed first part).
      const wire::LRHView lrh(bytes);
      lrh.set_DLID(kPermissiveLid);
      lrh.set_SLID(kPermissiveLid);
      RebuildCrcs(bytes);
      RouteResult result;
      result.egress.push_back(decision.port);
      result.rewritten = std::move(bytes);
      return result;
    }
    case smp::Verdict::kForwardByLid: {
      // A LID-routed segment starts here: the SMP leaves addressed to that LID, from ours.
      const wire::LRHView lrh(bytes);
      lrh.set_DLID(decision.lid);
      lrh.set_SLID(lid());
      RebuildCrcs(bytes);
      return RouteByLid(ingress, decision.lid, true, std::move(bytes));
    }
    case smp::Verdict::kDrop:
      break;
  }
  last_smp_drop_ = decision.reason;
  return Drop(SwitchDrop::kDirectedRoute, ingress);
}

std::vector<Transmit> Switch::Receive(uint8_t ingress, std::span<const uint8_t> packet,
                                      bool intact) {
  std::vector<Transmit> out;
  Emit(ingress, packet, intact, &out, 0);
  return out;
}

void Switch::Receive(uint8_t ingress, std::span<const uint8_t> packet, bool intact,
                     std::vector<Transmit>* out) {
  Emit(ingress, packet, intact, out, 0);
}

void Switch::ReceiveOwned(uint8_t ingress, std::vector<uint8_t>& packet, bool intact,
                          std::vector<Transmit>* out) {
  Emit(ingress, packet, intact, out, 0, &packet);
}

void Switch::Emit(uint8_t ingress, std::span<const uint8_t> packet, bool intact,
                  std::vector<Transmit>* out, int depth, std::vector<uint8_t>* owned) {
  RouteResult result = route(ingress, packet, intact);
  if (result.drop) return;
  const bool rewritten = !result.rewritten.empty();
  const std::span<const uint8_t> bytes =
      rewritten ? std::span<const uint8_t>(result.rewritten) : packet;
  // Rewritten bytes carry CRCs built here; unchanged ones are as intact as they came.
  const bool built = rewritten || intact;
  for (std::size_t i = 0; i < result.egress.size(); ++i) {
    const uint8_t port = result.egress[i];
    if (port == 0) {
      AnswerSmp(ingress, bytes, out, depth);
      continue;
    }
    ++counters_[port].xmit_packets;
    // The common case, one egress of a rewritten packet: hand its buffer on, no copy.
    if (rewritten && result.egress.size() == 1) {
      out->push_back({port, std::move(result.rewritten), true});
      return;
    }
    // Relayed unchanged to one port from a buffer the caller owns: forwarded by reference.
    if (!rewritten && result.egress.size() == 1 && owned != nullptr) {
      out->push_back({port, std::move(*owned), built});
      owned->clear();
      return;
    }
    out->push_back({port, std::vector<uint8_t>(bytes.begin(), bytes.end()), built});
  }
}

// The SMA's answer to an SMP that reached port 0, addressed back to the requester: along
// the directed route (LRH LIDs permissive), or LID-routed to the requester's LID.
void Switch::AnswerSmp(uint8_t ingress, std::span<const uint8_t> request,
                       std::vector<Transmit>* out, int depth) {
  std::optional<Mad> response = HandleSmp(request.subspan(kMadOffset, smp::kSmpBytes), ingress);
  if (!response) return;
  std::vector<uint8_t> packet(request.begin(), request.end());
  std::copy(response->begin(), response->end(), MadOf(packet).begin());
  const wire::LRHView lrh(packet);
  const uint16_t request_slid = lrh.SLID();
  const wire::DETHView deth(
      std::span<uint8_t>(packet).subspan(wire::LRH::kSize + wire::BTH::kSize));
  wire::BTHView(std::span<uint8_t>(packet).subspan(wire::LRH::kSize)).set_DestQP(deth.SrcQP());
  deth.set_SrcQP(0);

  if (mad::MadHeaderConstView(*response).MgmtClass() == mad::kSubnMgtDRClass) {
    const smp::Decision decision = smp::Respond(MadOf(packet), shape(), request_slid);
    switch (decision.verdict) {
      case smp::Verdict::kForward:
        lrh.set_DLID(kPermissiveLid);
        lrh.set_SLID(kPermissiveLid);
        RebuildCrcs(packet);
        if (!CanTransmit(decision.port, true)) {
          ++counters_[decision.port].xmit_discards;
          ++drops_[static_cast<std::size_t>(SwitchDrop::kEgressNotActive)];
          return;
        }
        ++counters_[decision.port].xmit_packets;
        out->push_back({decision.port, std::move(packet), true});
        return;
      case smp::Verdict::kLocal:
        ++drops_[static_cast<std::size_t>(SwitchDrop::kNoSm)];
        return;
      case smp::Verdict::kForwardByLid:
        lrh.set_DLID(decision.lid);
        lrh.set_SLID(lid());
        break;
      case smp::Verdict::kDrop:
        last_smp_drop_ = decision.reason;
        ++drops_[static_cast<std::size_t>(SwitchDrop::kDirectedRoute)];
        return;
    }
  } else {
    lrh.set_DLID(request_slid);
    lrh.set_SLID(lid());
  }
  RebuildCrcs(packet);
  // LID-routed from the management port; a response that comes back to this switch (its
  // own LID) is bounded by the depth.
  if (depth < 4) Emit(0, packet, true, out, depth + 1);
}

}  // namespace softib::fabric
