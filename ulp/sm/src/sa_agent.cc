// The SA agent: the MAD around the records (IBA 15.2.1), method/attribute dispatch, Get's
// one-record rule, GetTable packing into one MAD with an RMPP header, and ClassPortInfo.
#include <algorithm>
#include <cstring>

#include "sa_internal.h"
#include "softib/mad/mad_common.h"

namespace softib::sm {
namespace {

uint64_t Get64(const MadBytes& m, std::size_t at) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v = v << 8 | m[at + i];
  return v;
}
using sa::Put16;
void Put32(MadBytes& m, std::size_t at, uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8)
    m[at + static_cast<std::size_t>(i)] = static_cast<uint8_t>(v);
}

using sa::kQKeyGsi;
constexpr uint8_t kRmppActiveFirstLast = 0x7;
using sa::kRmppNoRespTime;
using sa::kRmppTypeData;
constexpr uint8_t kRespTimeValue = 18;  // ~1 s, the answer time ClassPortInfo advertises

bool AllowedMethod(uint16_t attribute, uint8_t method) {
  const bool read = method == kSaMethodGet || method == kSaMethodGetTable;
  switch (attribute) {
    case kSaAttrClassPortInfo:
      return method == kSaMethodGet;
    case kSaAttrInformInfo:
      return method == kSaMethodSet;
    case mad::ServiceRecord::kAttributeId:
    case mad::MCMemberRecord::kAttributeId:
      return read || method == kSaMethodSet || method == kSaMethodDelete;
    case mad::MultiPathRecord::kAttributeId:
      return method == kSaMethodGetMulti;
    default:
      return read;
  }
}

bool KnownAttribute(uint16_t attribute) {
  switch (attribute) {
    case kSaAttrClassPortInfo:
    case kSaAttrInformInfo:
    case mad::NodeRecord::kAttributeId:
    case mad::PortInfoRecord::kAttributeId:
    case mad::SwitchInfoRecord::kAttributeId:
    case mad::LinearForwardingTableRecord::kAttributeId:
    case mad::LinkRecord::kAttributeId:
    case mad::GUIDInfoRecord::kAttributeId:
    case mad::P_KeyTableRecord::kAttributeId:
    case mad::PathRecord::kAttributeId:
    case mad::MultiPathRecord::kAttributeId:
    case mad::ServiceRecord::kAttributeId:
    case mad::MCMemberRecord::kAttributeId:
    case mad::InformInfoRecord::kAttributeId:
      return true;
    default:
      return false;
  }
}

}  // namespace

void SubnetAdmin::set_subnet(const Subnet* subnet) {
  subnet_ = subnet;
  by_guid_.clear();
  if (!subnet_) return;
  for (const EndPort& e : subnet_->EndPorts()) by_guid_.emplace(GuidOf(e), e);
}

std::optional<EndPort> SubnetAdmin::PortByGuid(uint64_t guid) const {
  auto it = by_guid_.find(guid);
  if (it == by_guid_.end()) return std::nullopt;
  return it->second;
}

std::optional<EndPort> SubnetAdmin::PortByGid(const Gid& gid) const {
  if (!subnet_) return std::nullopt;
  auto port = PortByGuid(GidGuid(gid));
  if (!port) return std::nullopt;
  // The link-local prefix names a port of this subnet whatever the SM's prefix (IBA 4.1.1),
  // as OpenSM takes it.
  const uint64_t prefix = GidPrefix(gid);
  if (prefix != kDefaultSubnetPrefix &&
      prefix != PrefixOf(subnet_->node(port->node).ports[port->port]))
    return std::nullopt;
  return port;
}

uint64_t SubnetAdmin::GuidOf(const EndPort& e) const {
  const SmNode& node = subnet_->node(e.node);
  return node.is_switch() ? node.guid : node.ports[e.port].guid;
}

uint16_t SubnetAdmin::LidOf(const EndPort& e) const {
  return subnet_->node(e.node).ports[e.port].lid;
}

Gid SubnetAdmin::GidOf(const EndPort& e) const {
  return MakeGid(PrefixOf(subnet_->node(e.node).ports[e.port]), GuidOf(e));
}

SaResult SubnetAdmin::ClassPortInfo(const SaRequest&) {
  mad::ClassPortInfo cpi;
  cpi.BaseVersion = 1;
  cpi.ClassVersion = kSaClassVersion;
  // IsTrapSupported? no; bit 9 (IsSubnetOptimizedRecordSupported) no. Only the basics.
  cpi.CapabilityMask = 0;
  cpi.RespTimeValue = kRespTimeValue;
  SaResult out;
  out.record_size = mad::ClassPortInfo::kSize;
  out.Add(cpi.Pack());
  return out;
}

SaResult SubnetAdmin::Query(const SaRequest& r) {
  SaResult out;
  if (!KnownAttribute(r.attribute)) {
    out.status = kMadStatusAttributeUnsupported;
    return out;
  }
  if (!AllowedMethod(r.attribute, r.method)) {
    out.status = kMadStatusAttributeUnsupported;  // this method for this attribute
    return out;
  }
  if (r.data.size() < kSaDataBytes) {
    out.status = kSaStatusReqInvalid;
    return out;
  }
  const bool needs_subnet = r.attribute != kSaAttrClassPortInfo;
  if (needs_subnet && !subnet_) {
    out.status = kSaStatusNoResources;  // no sweep has finished yet
    return out;
  }
  ExpireServices(r.now);
  switch (r.attribute) {
    case kSaAttrClassPortInfo:
      out = ClassPortInfo(r);
      break;
    case kSaAttrInformInfo:
      out = Inform(r);
      break;
    case mad::NodeRecord::kAttributeId:
      out = sa::NodeRecords(*this, r);
      break;
    case mad::PortInfoRecord::kAttributeId:
      out = sa::PortInfoRecords(*this, r);
      break;
    case mad::SwitchInfoRecord::kAttributeId:
      out = sa::SwitchInfoRecords(*this, r);
      break;
    case mad::LinearForwardingTableRecord::kAttributeId:
      out = sa::LftRecords(*this, r);
      break;
    case mad::LinkRecord::kAttributeId:
      out = sa::LinkRecords(*this, r);
      break;
    case mad::GUIDInfoRecord::kAttributeId:
      out = sa::GuidInfoRecords(*this, r);
      break;
    case mad::P_KeyTableRecord::kAttributeId:
      out = sa::PKeyTableRecords(*this, r);
      break;
    case mad::PathRecord::kAttributeId:
      out = sa::PathRecords(*this, r);
      break;
    case mad::MultiPathRecord::kAttributeId:
      out = sa::MultiPathRecords(*this, r);
      break;
    case mad::ServiceRecord::kAttributeId:
      out = Services(r);
      break;
    case mad::MCMemberRecord::kAttributeId:
      out = McMembers(r);
      break;
    case mad::InformInfoRecord::kAttributeId:
      out = InformRecords(r);
      break;
  }
  // Get: exactly one record (15.4.1).
  if (out.status == kSaStatusOk && r.method == kSaMethodGet) {
    if (out.records.empty())
      out.status = kSaStatusNoRecords;
    else if (out.records.size() > 1)
      out.status = kSaStatusTooManyRecords;
  }
  if (out.status != kSaStatusOk) out.records.clear();
  return out;
}

std::vector<SaOutgoing> SubnetAdmin::Handle(const MadBytes& request, const MadAddress& from,
                                            double now) {
  std::vector<SaOutgoing> out;
  if (request[1] != kClassSubnAdm || (request[3] & kSaResponse)) return out;  // ACKs, answers
  const uint8_t method = request[3] & 0x7F;
  ++stats_.requests;

  SaOutgoing reply;
  reply.to = from;
  reply.to.qkey = kQKeyGsi;
  MadBytes& m = reply.mad;
  std::memcpy(m.data(), request.data(), 24);  // common header: TID, attribute, modifier
  m[3] = static_cast<uint8_t>(method | kSaResponse);
  if (method == kSaMethodGetTable) m[3] = 0x92;  // GetTableResp
  if (method == kSaMethodGetMulti) m[3] = 0x94;
  if (method == kSaMethodDelete) m[3] = 0x95;
  if (method == kSaMethodSet || method == kSaMethodGet) m[3] = 0x81;
  std::memcpy(m.data() + 48, request.data() + 48, 8);  // ComponentMask echoed

  uint16_t status = kSaStatusOk;
  SaResult result;
  if (request[0] != 1 || request[2] != kSaClassVersion) {
    status = kMadStatusBadVersion;
  } else if (method != kSaMethodGet && method != kSaMethodSet && method != kSaMethodGetTable &&
             method != kSaMethodDelete && method != kSaMethodGetMulti) {
    status = kMadStatusMethodUnsupported;
  } else {
    SaRequest r;
    r.method = method;
    r.attribute = static_cast<uint16_t>(request[16] << 8 | request[17]);
    r.modifier = static_cast<uint32_t>(request[20] << 24 | request[21] << 16 | request[22] << 8 |
                                       request[23]);
    r.component_mask = Get64(request, 48);
    r.data = std::span<const uint8_t>(request).subspan(kSaHeaderBytes, kSaDataBytes);
    r.requester_lid = from.lid;
    r.requester_qpn = from.qpn;
    r.now = now;
    // The most any one answer carries (records are 8 bytes at least), plus one.
    if (method == kSaMethodGetTable || method == kSaMethodGetMulti)
      r.max_records = (rmpp_limit_ ? rmpp_limit_ - kSaHeaderBytes : kSaDataBytes) / 8 + 1;
    result = Query(r);
    status = result.status;
  }
  if (status != kSaStatusOk) ++stats_.errors;
  Put16(m, 4, status);

  const std::size_t stride = (result.record_size + 7) / 8 * 8;
  if (stride) Put16(m, 44, static_cast<uint16_t>(stride / 8));
  std::size_t used = 0;
  if ((method == kSaMethodGetTable || method == kSaMethodGetMulti) && rmpp_limit_) {
    AnswerByRmpp(reply, result, stride);
  } else if (method == kSaMethodGetTable || method == kSaMethodGetMulti) {
    const std::size_t fit = stride ? kSaDataBytes / stride : 0;
    const std::size_t n = std::min(fit, result.records.size());
    if (n < result.records.size()) {
      ++stats_.truncated_tables;
      stats_.records_dropped += result.records.size() - n;
    }
    for (std::size_t i = 0; i < n; ++i)
      std::memcpy(m.data() + kSaHeaderBytes + i * stride, result.records[i].data(),
                  result.records[i].size());
    used = n * stride;
    // One segment, first and last (IBA 13.6.2.1): PayloadLength counts the SA header (20
    // bytes after the RMPP header) and the records.
    m[24] = sa::kRmppVersion;
    m[25] = kRmppTypeData;
    m[26] = static_cast<uint8_t>(kRmppNoRespTime << 3 | kRmppActiveFirstLast);
    Put32(m, 28, 1);
    Put32(m, 32, static_cast<uint32_t>(20 + used));
  } else if (!result.records.empty()) {
    const auto& rec = result.records.front();
    std::memcpy(m.data() + kSaHeaderBytes, rec.data(), std::min(rec.size(), kSaDataBytes));
  } else if (status != kSaStatusOk) {
    // An error echoes the request's data, as the requester may want to see what was refused.
    std::memcpy(m.data() + kSaHeaderBytes, request.data() + kSaHeaderBytes, kSaDataBytes);
  }
  // Only what the answer holds: a requester over umad2sim (saquery) counts the records of a
  // GetTable answer by the length it receives, not by the RMPP PayloadLength.
  if (method == kSaMethodGetTable || method == kSaMethodGetMulti)
    reply.to.length = static_cast<uint16_t>(kSaHeaderBytes + used);
  out.push_back(reply);
  return out;
}

}  // namespace softib::sm
