// CM MADs on the wire: the MAD header of a CM message, the message inside a MAD, and the
// local port facts the messages need (P_Key index, port GUID and LID).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/cm/cep.h"
#include "softib/mad/mad_sa.h"

namespace softib::al::cm {

inline constexpr std::size_t kCmMessageOffset = 24;
inline constexpr std::size_t kCmMessageSize = 232;
inline constexpr uint32_t kQp1Qkey = 0x80010000;

// A CM MAD: base version 1, ComMgt version 2, Send, TID low half `tid_low` (the agent puts
// its id in the high half), the attribute, then the 232-byte message.
std::array<uint8_t, 256> CmMad(uint16_t attribute, uint32_t tid_low,
                               std::span<const uint8_t> message);

inline std::span<const uint8_t> CmMessage(std::span<const uint8_t> mad) {
  return mad.subspan(kCmMessageOffset, kCmMessageSize);
}

// The index of `pkey` (its low 15 bits; a full member preferred) in the port's table.
bool FindPkeyIndex(AlCa* ca, uint8_t port, uint16_t pkey, uint16_t* index);
// The port's attributes (GUID host order, LID, state).
bool QueryPort(AlCa* ca, uint8_t port, abi::PortAttributes* attributes);

// The peer's CM (QP1) at the far end of `path`.
MadAddress PeerCmOf(const CepPath& path);

// The local port whose LID (under its LMC) is `lid`; false when none is.
bool PortOfLid(AlCa* ca, uint16_t lid, uint8_t* port, abi::PortAttributes* attributes);

// A path of the connection from an SA PathRecord (wire format): on `port`, or on the port
// whose LID is the record's SLID when `port` is 0.
bool PathOfRecord(AlCa* ca, uint8_t port, std::span<const uint8_t> record, CepPath* path,
                  softib::mad::PathRecord* parsed);

// An alternate path as the receiver of a REQ or LAP sees it: the message's alternate
// fields reversed, on the local port whose LID is AlternateRemotePortLID.
template <typename Message>
bool ReceivedAlternate(AlCa* ca, const Message& m, uint16_t pkey, CepPath* path) {
  abi::PortAttributes port;
  uint8_t port_num = 0;
  if (m.AlternateLocalPortLID == 0 || !PortOfLid(ca, m.AlternateRemotePortLID, &port_num, &port))
    return false;
  *path = CepPath{};
  path->av.port_num = port_num;
  path->av.dlid = m.AlternateLocalPortLID;
  path->av.sl = m.AlternateSL;
  path->av.src_path_bits =
      static_cast<uint8_t>((m.AlternateRemotePortLID - port.lid) & ((1u << port.lmc) - 1));
  path->av.static_rate = m.AlternatePacketRate;
  path->av.grh_present = m.AlternateSubnetLocal ? 0 : 1;
  std::copy(m.AlternateLocalPortGID.begin(), m.AlternateLocalPortGID.end(), path->av.grh.dgid.raw);
  path->av.grh.flow_label = m.AlternateFlowLabel;
  path->av.grh.hop_limit = m.AlternateHopLimit;
  path->av.grh.traffic_class = m.AlternateTrafficClass;
  path->local_ack_timeout = m.AlternateLocalACKTimeout;
  path->packet_life_time =
      static_cast<uint8_t>(m.AlternateLocalACKTimeout > 0 ? m.AlternateLocalACKTimeout - 1 : 0);
  path->pkey = pkey;
  return FindPkeyIndex(ca, port_num, pkey, &path->pkey_index);
}

// The alternate-path fields of a REQ or LAP from `path` and its record.
template <typename Message>
void FillAlternate(Message* m, const softib::mad::PathRecord& record, const CepPath& path) {
  m->AlternateLocalPortLID = record.SLID;
  m->AlternateRemotePortLID = record.DLID;
  m->AlternateLocalPortGID = record.SGID;
  m->AlternateRemotePortGID = record.DGID;
  m->AlternateFlowLabel = record.FlowLabel;
  m->AlternatePacketRate = record.Rate;
  m->AlternateTrafficClass = record.TClass;
  m->AlternateHopLimit = record.HopLimit;
  m->AlternateSL = record.SL;
  m->AlternateSubnetLocal = record.HopLimit <= 1 ? 1 : 0;
  m->AlternateLocalACKTimeout = path.local_ack_timeout;
}

}  // namespace softib::al::cm
