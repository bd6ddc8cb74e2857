// Shared by the SA's record families: ComponentMask matching over the codec's field
// descriptions, the records built from the subnet model, and link rate / MTU helpers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "softib/codec/format_desc.h"
#include "softib/sm/mad_port.h"
#include "softib/sm/sa.h"

namespace softib::sm::sa {

// A big-endian 16-bit field of a MAD (SA requests and answers alike).
inline void Put16(MadBytes& m, std::size_t at, uint16_t v) {
  m[at] = static_cast<uint8_t>(v >> 8);
  m[at + 1] = static_cast<uint8_t>(v);
}

// True when every field of `desc` whose ComponentMask bit is in `mask` holds the same bits
// in `query` and `record` (IBA 15.2.4: only the selected components are compared).
bool ComponentsMatch(const codec::FormatDesc& desc, uint64_t mask, std::span<const uint8_t> query,
                     std::span<const uint8_t> record);

// The mask bits of `desc`'s fields named in `names`, for required-component checks.
uint64_t ComponentBit(const codec::FormatDesc& desc, std::string_view field);

// Filters `candidates` (each a packed record of `desc`) by the request's mask into `out`.
template <typename Record>
void AddIfMatches(const SaRequest& r, const Record& record, SaResult& out) {
  const auto bytes = record.Pack();
  if (ComponentsMatch(Record::Desc(), r.component_mask, r.data, bytes)) out.Add(bytes);
}

// Record families over the subnet model (sa_node.cc, sa_switch.cc, sa_path.cc).
SaResult NodeRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult PortInfoRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult SwitchInfoRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult LftRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult LinkRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult GuidInfoRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult PKeyTableRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult PathRecords(const SubnetAdmin& sa, const SaRequest& r);
SaResult MultiPathRecords(const SubnetAdmin& sa, const SaRequest& r);

// The PathRecord.Rate code for a link of `width` (LinkWidthActive) and `speed`
// (LinkSpeedActive) or `speed_ext` (LinkSpeedExtActive, when non-zero); 0 when unknown.
uint8_t RateCode(uint8_t width, uint8_t speed, uint8_t speed_ext = 0);
// Gb/s * 10 of a Rate code (for comparisons: codes are not ordered by speed); 0 if unknown.
unsigned RateTenthsGbps(uint8_t rate);

// Whether `value` satisfies `selector` (0 >, 1 <, 2 =, 3 largest) relative to `wanted`.
bool SelectorAccepts(uint8_t selector, unsigned value, unsigned wanted);

// The RMPP header of a GetTable answer (IBA 13.6.2.1): version 1, DATA, no response time.
inline constexpr uint32_t kQKeyGsi = 0x80010000;  // the well-known GSI Q_Key
inline constexpr uint8_t kRmppVersion = 1;
inline constexpr uint8_t kRmppTypeData = 1;
inline constexpr uint8_t kRmppNoRespTime = 0x1F;

}  // namespace softib::sm::sa
