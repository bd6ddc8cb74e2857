// The tables of an HCA port as SubnGet/SubnSet see them (IBA 14.2.5.7-14.2.5.9):
// P_KeyTable in blocks of 32, SLtoVLMappingTable, VLArbitrationTable by portion. A modifier
// naming a block or portion the port does not have is "invalid attribute value" (0x001C).
// The P_Keys set here are the ones the data path checks (Port::pkeys).
#include <algorithm>

#include "hca/device/hca.h"
#include "softib/mad/mad_sm.h"
#include "softib/smp/sma_common.h"

namespace softib::hca {
namespace {

using smp::kStatusBadValue;
using smp::kStatusOk;

constexpr unsigned kPKeysPerBlock = 32;
constexpr unsigned kVlArbEntriesPerPortion = 32;

}  // namespace

uint16_t Hca::PKeyTableAccess(Port& p, bool set, uint32_t modifier, SmpData data) {
  // Bits 15:0 the block; bits 31:16 name a switch's external port and are ignored on a CA.
  const std::size_t first = std::size_t{modifier & 0xFFFF} * kPKeysPerBlock;
  if (first >= p.pkeys.size()) return kStatusBadValue;
  const std::size_t count = std::min<std::size_t>(kPKeysPerBlock, p.pkeys.size() - first);
  mad::P_KeyTable block;
  if (set) {
    block.Unpack(data);
    const bool changed = !std::equal(block.P_KeyEntry.begin(), block.P_KeyEntry.begin() + count,
                                     p.pkeys.begin() + first);
    std::copy_n(block.P_KeyEntry.begin(), count, p.pkeys.begin() + first);
    if (changed) Report(abi::AsyncEventType::PKEY_CHANGE, p.number);
  }
  block = {};
  std::copy_n(p.pkeys.begin() + first, count, block.P_KeyEntry.begin());
  block.Pack(data);
  return kStatusOk;
}

uint16_t Hca::SlToVlAccess(Port& p, bool set, uint32_t modifier, SmpData data) {
  // A CA port has one table: the modifier (a switch's input/output ports) must be 0.
  if (modifier != 0) return kStatusBadValue;
  if (set) std::copy_n(data.begin(), p.sl_to_vl.size(), p.sl_to_vl.begin());
  std::fill(data.begin(), data.end(), 0);
  std::copy(p.sl_to_vl.begin(), p.sl_to_vl.end(), data.begin());
  return kStatusOk;
}

uint16_t Hca::VlArbAccess(Port& p, bool set, uint32_t modifier, SmpData data) {
  // Bits 31:16 the portion (1: low 0-31, 2: low 32-63, 3: high 0-31, 4: high 32-63);
  // bits 15:0 the port (OpenSM names the CA port; 0 means this one).
  const unsigned portion = modifier >> 16;
  const unsigned port_bits = modifier & 0xFFFF;
  if (portion < 1 || portion > 4 || port_bits > config_.num_ports) return kStatusBadValue;
  Port& target = port_bits == 0 ? p : port(static_cast<uint8_t>(port_bits));
  const unsigned first = (portion == 2 || portion == 4) ? kVlArbEntriesPerPortion : 0;
  if (first >= kVlArbEntries) return kStatusBadValue;
  auto& table = portion <= 2 ? target.vlarb_low : target.vlarb_high;
  const unsigned count = std::min(kVlArbEntriesPerPortion, kVlArbEntries - first);
  mad::VLArbitrationTable value;
  if (set) {
    value.Unpack(data);
    for (unsigned i = 0; i < count; ++i) table[first + i] = {value.VL[i], value.Weight[i]};
  }
  value = {};
  for (unsigned i = 0; i < count; ++i) {
    value.VL[i] = table[first + i][0];
    value.Weight[i] = table[first + i][1];
  }
  value.Pack(data);
  return kStatusOk;
}

}  // namespace softib::hca
