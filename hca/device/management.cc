// MADs of a device that has no special QPs (softibd's light hosts): the receive side makes
// the checks a QP0/QP1 receive would make and hands the MAD to management_sink; the send
// side is a special QP's UD send without the QP.
#include "hca/device/hca.h"

namespace softib::hca {

void Hca::ReceiveManagement(Port& in, const ParsedPacket& packet) {
  PortCounters& counters = in.counters;
  const auto drop = [&](RecvDrop why) { ++counters.recv_drops[static_cast<std::size_t>(why)]; };
  const PacketHeaders& hdr = packet.hdr;
  constexpr uint8_t kTransportUd = 3;  // IBA 9.2.1: BTH:OpCode bits 7..5
  if (hdr.bth.OpCode >> 5 != kTransportUd) return drop(RecvDrop::kWrongTransport);
  uint16_t pkey_index = 0;
  if (hdr.bth.DestQP == kGsiQpn) {
    const std::optional<uint16_t> matched = GsiKeysMatch(in, hdr);
    if (!matched) return;
    pkey_index = *matched;
  }
  if (packet.payload.size() > in.mtu_bytes()) return drop(RecvDrop::kTooLong);
  ManagementDatagram datagram;
  datagram.port = in.number;
  datagram.qpn = hdr.bth.DestQP;
  datagram.src_qp = hdr.deth.SrcQP;
  datagram.slid = hdr.lrh.SLID;
  datagram.sl = hdr.lrh.SL;
  datagram.pkey_index = pkey_index;
  datagram.mad = packet.payload;
  management_sink(datagram);
}

bool Hca::SendManagement(uint8_t port_number, uint32_t src_qpn, const ManagementAddress& to,
                         std::span<const uint8_t> mad) {
  if (port_number < 1 || port_number > ports_.size() || src_qpn > kGsiQpn) return false;
  Port& out = port(port_number);
  abi::AddressVector av{};
  av.dlid = to.dlid;
  av.sl = to.sl;
  PacketHeaders hdr = DatagramHeaders(
      out, av, src_qpn == kSmiQpn ? abi::QpType::SMI : abi::QpType::GSI, to.pkey_index);
  uint32_t& psn = management_psns_[port_number - 1][src_qpn];
  hdr.bth.DestQP = to.remote_qpn & kPsnMask;
  hdr.bth.PSN = psn;
  psn = (psn + 1) & kPsnMask;
  hdr.deth.Q_Key = to.remote_qkey;
  hdr.deth.SrcQP = src_qpn;
  return Transmit(out, hdr, mad);
}

}  // namespace softib::hca
