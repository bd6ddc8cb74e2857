// The switch's tables as SubnGet/SubnSet see them (IBA 14.2.5.7-14.2.5.12): P_KeyTable per
// port, SLtoVLMappingTable per input/output port pair, VLArbitrationTable per output port,
// LinearForwardingTable in blocks of 64 LIDs and MulticastForwardingTable in blocks of 32
// MLIDs by 16-port mask position. A modifier naming a block, port or portion the switch
// does not have is "invalid attribute value" (0x001C).
#include <algorithm>

#include "softib/fabric/switch.h"
#include "softib/smp/sma_common.h"

namespace softib::fabric {

using smp::kStatusBadAttribute;
using smp::kStatusBadMethod;
using smp::kStatusBadValue;
using smp::kStatusBadVersion;
using smp::kStatusOk;
namespace {

constexpr unsigned kPKeysPerBlock = 32;
constexpr unsigned kLidsPerLftBlock = 64;
constexpr unsigned kMlidsPerMftBlock = 32;
constexpr unsigned kVlArbEntriesPerPortion = 32;

}  // namespace

uint16_t Switch::PKeyTableAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data) {
  const unsigned block = modifier & 0xFFFF;
  const unsigned port = (modifier >> 16) & 0xFF;
  if (port > config_.num_ports) return kStatusBadValue;  // bits 31:24 are reserved
  std::vector<uint16_t>& table = ports_[port].pkeys;
  const std::size_t first = std::size_t{block} * kPKeysPerBlock;
  if (first >= table.size()) return kStatusBadValue;
  const std::size_t count = std::min<std::size_t>(kPKeysPerBlock, table.size() - first);
  mad::P_KeyTable block_value;
  if (set) {
    block_value.Unpack(data);
    std::copy_n(block_value.P_KeyEntry.begin(), count, table.begin() + first);
  }
  block_value = {};
  std::copy_n(table.begin() + first, count, block_value.P_KeyEntry.begin());
  block_value.Pack(data);
  return kStatusOk;
}

uint16_t Switch::SlToVlAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data) {
  // Bits 15:8 input port, 7:0 output port; OptimizedSLtoVLMappingProgramming is 0, so the
  // upper bits carry nothing this switch understands.
  const unsigned in = (modifier >> 8) & 0xFF;
  const unsigned out = modifier & 0xFF;
  if ((modifier >> 16) != 0 || in > config_.num_ports || out > config_.num_ports)
    return kStatusBadValue;
  std::array<uint8_t, 8>& entry = sl2vl_[in * (config_.num_ports + 1u) + out];
  mad::SLtoVLMappingTable table;
  if (set) {
    table.Unpack(data);
    entry = table.Pack();
  }
  table.Unpack(entry);
  std::fill(data.begin(), data.end(), 0);
  table.Pack(data);
  return kStatusOk;
}

uint16_t Switch::VlArbAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data) {
  // Bits 31:16 the portion (1: low 0-31, 2: low 32-63, 3: high 0-31, 4: high 32-63), bits
  // 15:0 the output port. A portion beyond the table's capability does not exist.
  const unsigned portion = modifier >> 16;
  const unsigned port = modifier & 0xFFFF;
  if (portion < 1 || portion > 4 || port > config_.num_ports) return kStatusBadValue;
  const unsigned first = (portion == 2 || portion == 4) ? kVlArbEntriesPerPortion : 0;
  const unsigned cap = config_.vl_arbitration_cap;
  if (first >= cap) return kStatusBadValue;
  Port& p = ports_[port];
  std::array<VlArbEntry, 64>& table = portion <= 2 ? p.vlarb_low : p.vlarb_high;
  const unsigned count = std::min(kVlArbEntriesPerPortion, cap - first);
  mad::VLArbitrationTable value;
  if (set) {
    value.Unpack(data);
    for (unsigned i = 0; i < count; ++i) table[first + i] = {value.VL[i], value.Weight[i]};
  }
  value = {};
  for (unsigned i = 0; i < count; ++i) {
    value.VL[i] = table[first + i].vl;
    value.Weight[i] = table[first + i].weight;
  }
  value.Pack(data);
  return kStatusOk;
}

uint16_t Switch::LftAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data) {
  if (modifier >= lft_.size() / kLidsPerLftBlock) return kStatusBadValue;
  const auto first = lft_.begin() + std::size_t{modifier} * kLidsPerLftBlock;
  mad::LinearForwardingTable block;
  if (set) {
    block.Unpack(data);
    std::copy(block.Port.begin(), block.Port.end(), first);
  }
  std::copy_n(first, kLidsPerLftBlock, block.Port.begin());
  block.Pack(data);
  return kStatusOk;
}

uint16_t Switch::MftAccess(bool set, uint32_t modifier, std::span<uint8_t, 64> data) {
  // Bits 31:28 the port mask position (ports position*16 .. +15), bits 8:0 the block;
  // bits 27:9 are reserved.
  const unsigned position = modifier >> 28;
  const unsigned block = modifier & 0x1FF;
  if (position >= mft_positions_ ||
      std::size_t{block} * kMlidsPerMftBlock >= config_.multicast_fdb_cap)
    return kStatusBadValue;
  mad::MulticastForwardingTable value;
  const std::size_t first_mlid = std::size_t{block} * kMlidsPerMftBlock;
  if (set) {
    value.Unpack(data);
    for (unsigned i = 0; i < kMlidsPerMftBlock; ++i) {
      uint16_t mask = value.PortMask[i];
      // Bits for ports the switch does not have are not kept.
      const unsigned base = position * 16;
      for (unsigned bit = 0; bit < 16; ++bit)
        if (base + bit > config_.num_ports) mask = static_cast<uint16_t>(mask & ~(1u << bit));
      mft_[(first_mlid + i) * mft_positions_ + position] = mask;
    }
  }
  for (unsigned i = 0; i < kMlidsPerMftBlock; ++i)
    value.PortMask[i] = mft_[(first_mlid + i) * mft_positions_ + position];
  value.Pack(data);
  return kStatusOk;
}

}  // namespace softib::fabric
