// The ports' Performance Management Agent (IBA 16.1): ClassPortInfo, PortCounters (16/32
// bits, saturating) and PortCountersExtended (64 bits) from the counters the data path
// keeps (counters.h); a Set clears the counters its CounterSelect masks name, in both
// attributes at once (they are one set of counters seen at two widths).
#include <algorithm>

#include "hca/device/hca.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_perf.h"
#include "softib/smp/sma_common.h"

namespace softib::hca {
namespace {

using smp::kStatusBadAttribute;
using smp::kStatusBadMethod;
using smp::kStatusBadValue;
using smp::kStatusBadVersion;
using smp::kStatusOk;

constexpr std::size_t kPerfDataOffset = 64;
// ClassPortInfo:CapabilityMask of PerfMgt (IBA 16.1.3.1): PortCountersExtended is
// supported (IsExtendedWidthSupported, bit 9), and QP1Dropped is counted (bit 15).
// CapabilityMask2 bit 1: IsAdditionalPortCountersExtended (the 64-bit error counters).
constexpr uint16_t kPmCapExtendedWidth = 1u << 9;
constexpr uint16_t kPmCapQp1Dropped = 1u << 15;
constexpr uint32_t kPmCap2AdditionalExtended = 1u << 1;
constexpr uint8_t kPmRespTimeValue = 8;

template <typename T>
T Saturate(uint64_t v) {
  return static_cast<T>(std::min<uint64_t>(v, T(~T{0})));
}
uint8_t Saturate4(uint64_t v) { return static_cast<uint8_t>(std::min<uint64_t>(v, 0xF)); }

// The counters both attributes select, by their bit in PortCounters:CounterSelect
// (IBA 16.1.3.5) — also their bit in PortCountersExtended:CounterSelect2 (16.1.4.11).
enum ErrorCounterBit : unsigned {
  kSymbolError = 0,
  kLinkErrorRecovery = 1,
  kLinkDowned = 2,
  kRcvErrors = 3,
  kRcvRemotePhysicalErrors = 4,
  kRcvSwitchRelayErrors = 5,
  kXmitDiscards = 6,
  kXmitConstraintErrors = 7,
  kRcvConstraintErrors = 8,
  kLocalLinkIntegrityErrors = 9,
  kExcessiveBufferOverrunErrors = 10,
  kVl15Dropped = 11,
};

void ClearErrors(PortCounters& c, uint32_t select) {
  auto has = [select](unsigned bit) { return (select >> bit & 1) != 0; };
  if (has(kSymbolError)) c.symbol_errors = 0;
  if (has(kRcvErrors)) c.rcv_errors = 0;
  if (has(kXmitDiscards)) c.xmit_discards = 0;
  if (has(kLocalLinkIntegrityErrors)) c.local_link_integrity_errors = 0;
  if (has(kVl15Dropped)) c.vl15_dropped = 0;
  // The others (link recovery, link downed, remote physical, switch relay, constraint,
  // buffer overrun) have no event that counts them on this device: always 0.
}

}  // namespace

LocalMadResult Hca::ProcessPerfMgt(Port& p, std::span<const uint8_t, 256> request,
                                   std::span<uint8_t, 256> response) {
  const mad::MadHeaderConstView header(request);
  if (header.R() != 0) return LocalMadResult::kNoReply;  // a response: for a manager
  std::copy(request.begin(), request.end(), response.begin());
  const std::span<uint8_t> data(response.data() + kPerfDataOffset, 256 - kPerfDataOffset);
  const uint8_t method = header.Method();
  const bool set = method == mad::kPerfMgtSet;
  const uint16_t attribute = header.AttributeID();
  uint16_t status = kStatusOk;
  PortCounters& c = p.counters;

  // PortSelect names the port whose counters are meant: on a CA, one of its own ports
  // (0xFF, all ports, is not offered: AllPortSelect is clear).
  auto select_port = [&](uint8_t port_select) -> PortCounters* {
    if (port_select == 0) return &c;
    if (port_select > config_.num_ports) return nullptr;
    return &port(port_select).counters;
  };

  if (header.ClassVersion() != 1) {
    status = kStatusBadVersion;
  } else if (method != mad::kPerfMgtGet && !set) {
    status = kStatusBadMethod;
  } else if (header.AttributeModifier() != 0 &&
             (attribute == mad::ClassPortInfo::kAttributeId ||
              attribute == mad::PortCounters::kAttributeId ||
              attribute == mad::PortCountersExtended::kAttributeId)) {
    status = kStatusBadValue;
  } else if (attribute == mad::ClassPortInfo::kAttributeId) {
    if (set) {
      status = kStatusBadAttribute;  // no redirection, no traps to configure
    } else {
      mad::ClassPortInfo cpi;
      cpi.BaseVersion = 1;
      cpi.ClassVersion = 1;
      cpi.CapabilityMask = kPmCapExtendedWidth | kPmCapQp1Dropped;
      cpi.CapabilityMask2 = kPmCap2AdditionalExtended;
      cpi.RespTimeValue = kPmRespTimeValue;
      std::fill(data.begin(), data.end(), 0);
      cpi.Pack(data);
    }
  } else if (attribute == mad::PortCounters::kAttributeId) {
    mad::PortCounters req;
    req.Unpack(data);
    PortCounters* target = select_port(req.PortSelect);
    if (target == nullptr) {
      status = kStatusBadValue;
    } else {
      PortCounters& t = *target;
      if (set) {
        const uint16_t sel = req.CounterSelect;
        ClearErrors(t, sel);
        if (sel >> 12 & 1) t.xmit_data_words = 0;
        if (sel >> 13 & 1) t.rcv_data_words = 0;
        if (sel >> 14 & 1) t.xmit_packets = 0;
        if (sel >> 15 & 1) t.rcv_packets = 0;
        if (req.CounterSelect2 >> 1 & 1) t.qp1_dropped = 0;  // bit 0 is PortXmitWait
      }
      mad::PortCounters out;
      out.PortSelect = req.PortSelect;
      out.CounterSelect = req.CounterSelect;
      out.CounterSelect2 = req.CounterSelect2;
      out.SymbolErrorCounter = Saturate<uint16_t>(t.symbol_errors);
      out.PortRcvErrors = Saturate<uint16_t>(t.rcv_errors);
      out.PortXmitDiscards = Saturate<uint16_t>(t.xmit_discards);
      out.LocalLinkIntegrityErrors = Saturate4(t.local_link_integrity_errors);
      out.QP1Dropped = Saturate<uint16_t>(t.qp1_dropped);
      out.VL15Dropped = Saturate<uint16_t>(t.vl15_dropped);
      out.PortXmitData = Saturate<uint32_t>(t.xmit_data_words);
      out.PortRcvData = Saturate<uint32_t>(t.rcv_data_words);
      out.PortXmitPkts = Saturate<uint32_t>(t.xmit_packets);
      out.PortRcvPkts = Saturate<uint32_t>(t.rcv_packets);
      std::fill(data.begin(), data.end(), 0);
      out.Pack(data);
    }
  } else if (attribute == mad::PortCountersExtended::kAttributeId) {
    mad::PortCountersExtended req;
    req.Unpack(data);
    PortCounters* target = select_port(req.PortSelect);
    if (target == nullptr) {
      status = kStatusBadValue;
    } else {
      PortCounters& t = *target;
      if (set) {
        const uint16_t sel = req.CounterSelect;
        if (sel >> 0 & 1) t.xmit_data_words = 0;
        if (sel >> 1 & 1) t.rcv_data_words = 0;
        if (sel >> 2 & 1) t.xmit_packets = 0;
        if (sel >> 3 & 1) t.rcv_packets = 0;
        if (sel >> 4 & 1) t.xmit_unicast_packets = 0;
        if (sel >> 5 & 1) t.rcv_unicast_packets = 0;
        if (sel >> 6 & 1) t.xmit_multicast_packets = 0;
        if (sel >> 7 & 1) t.rcv_multicast_packets = 0;
        ClearErrors(t, req.CounterSelect2);
        if (req.CounterSelect2 >> 13 & 1) t.qp1_dropped = 0;  // bit 12 is PortXmitWait
      }
      mad::PortCountersExtended out;
      out.PortSelect = req.PortSelect;
      out.CounterSelect = req.CounterSelect;
      out.CounterSelect2 = req.CounterSelect2;
      out.PortXmitData = t.xmit_data_words;
      out.PortRcvData = t.rcv_data_words;
      out.PortXmitPkts = t.xmit_packets;
      out.PortRcvPkts = t.rcv_packets;
      out.PortUnicastXmitPkts = t.xmit_unicast_packets;
      out.PortUnicastRcvPkts = t.rcv_unicast_packets;
      out.PortMulticastXmitPkts = t.xmit_multicast_packets;
      out.PortMulticastRcvPkts = t.rcv_multicast_packets;
      out.SymbolErrorCounter = t.symbol_errors;
      out.PortRcvErrors = t.rcv_errors;
      out.PortXmitDiscards = t.xmit_discards;
      out.LocalLinkIntegrityErrors = t.local_link_integrity_errors;
      out.VL15Dropped = t.vl15_dropped;
      out.QP1Dropped = t.qp1_dropped;
      std::fill(data.begin(), data.end(), 0);
      out.Pack(data);
    }
  } else {
    // PortSamplesControl/Result, the per-VL and flow counters: not offered.
    status = kStatusBadAttribute;
  }
  const mad::MadHeaderView out(response);
  out.set_R(1);
  out.set_Method(mad::kPerfMgtGet);  // with R: GetResp (0x81)
  out.set_Status(status);
  return LocalMadResult::kReply;
}

}  // namespace softib::hca
