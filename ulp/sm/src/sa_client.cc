// softib-sm --query: SA requests by attribute name and field values, answers printed.
#include "softib/sm/sa_client.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "sa_internal.h"
#include "softib/codec/engine.h"
#include "softib/sm/sa.h"
#include "softib/sm/transactions.h"

namespace softib::sm {
namespace {

const std::map<std::string, std::string>& ShortNames() {
  static const std::map<std::string, std::string> names = {
      {"CPI", "ClassPortInfo"},
      {"NR", "NodeRecord"},
      {"PIR", "PortInfoRecord"},
      {"SWIR", "SwitchInfoRecord"},
      {"SWI", "SwitchInfoRecord"},
      {"LFTR", "LinearForwardingTableRecord"},
      {"LFT", "LinearForwardingTableRecord"},
      {"LR", "LinkRecord"},
      {"GIR", "GUIDInfoRecord"},
      {"PKTR", "P_KeyTableRecord"},
      {"PKR", "P_KeyTableRecord"},
      {"PR", "PathRecord"},
      {"MPR", "MultiPathRecord"},
      {"SR", "ServiceRecord"},
      {"MCMR", "MCMemberRecord"},
      {"IIR", "InformInfoRecord"},
      {"II", "InformInfo"},
  };
  return names;
}

uint32_t Get32(const MadBytes& m, std::size_t at) {
  return static_cast<uint32_t>(m[at] << 24 | m[at + 1] << 16 | m[at + 2] << 8 | m[at + 3]);
}

}  // namespace

std::string SaStatusText(uint16_t status) {
  switch (status) {
    case kSaStatusOk:
      return "OK";
    case kMadStatusBadVersion:
      return "bad version";
    case kMadStatusMethodUnsupported:
      return "method not supported";
    case kMadStatusAttributeUnsupported:
      return "method/attribute combination not supported";
    case kMadStatusInvalidValue:
      return "invalid attribute value";
    case kSaStatusNoResources:
      return "ERR_NO_RESOURCES";
    case kSaStatusReqInvalid:
      return "ERR_REQ_INVALID";
    case kSaStatusNoRecords:
      return "ERR_NO_RECORDS";
    case kSaStatusTooManyRecords:
      return "ERR_REQ_TOO_MANY_RECORDS";
    case kSaStatusInvalidGid:
      return "ERR_REQ_INVALID_GID";
    case kSaStatusInsufficientComponents:
      return "ERR_REQ_INSUFFICIENT_COMPONENTS";
    case kSaStatusDenied:
      return "ERR_REQ_DENIED";
    default: {
      char text[32];
      std::snprintf(text, sizeof text, "status 0x%04x", status);
      return text;
    }
  }
}

std::string BuildSaRequest(const SaClientRequest& request, MadBytes& mad,
                           const codec::FormatDesc** desc_out) {
  std::string name = request.attribute;
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  if (auto it = ShortNames().find(upper); it != ShortNames().end()) name = it->second;
  const codec::FormatDesc* desc = codec::FindFormat(name);
  if (!desc || desc->kind != codec::FormatKind::kAttribute ||
      std::find(desc->mgmt_classes.begin(), desc->mgmt_classes.end(), kClassSubnAdm) ==
          desc->mgmt_classes.end())
    return "unknown SA attribute " + request.attribute;
  mad.fill(0);
  mad[0] = 1;
  mad[1] = kClassSubnAdm;
  mad[2] = kSaClassVersion;
  mad[3] = request.method;
  sa::Put16(mad, 16, desc->attribute_id);
  uint64_t mask = 0;
  auto data = std::span<uint8_t>(mad).subspan(kSaHeaderBytes, kSaDataBytes);
  for (const auto& [field, value] : request.fields) {
    if (std::string e = codec::SetField(
            *desc, data.first(std::min<std::size_t>(desc->size, kSaDataBytes)), field, value);
        !e.empty())
      return e;
    for (const codec::FieldDesc& f : desc->fields) {
      std::string a(f.name), b(field);
      std::transform(a.begin(), a.end(), a.begin(), ::tolower);
      std::transform(b.begin(), b.end(), b.begin(), ::tolower);
      if (a == b.substr(0, b.find('[')) && f.component >= 0) mask |= uint64_t{1} << f.component;
    }
  }
  for (int i = 0; i < 8; ++i) mad[48 + i] = static_cast<uint8_t>(mask >> (56 - 8 * i));
  *desc_out = desc;
  return "";
}

SaClientAnswer ParseSaResponse(const MadBytes& mad, const codec::FormatDesc& desc) {
  SaClientAnswer a;
  a.desc = &desc;
  a.status = static_cast<uint16_t>(mad[4] << 8 | mad[5]);
  if (a.status != 0) return a;
  const uint8_t method = mad[3] & 0x7F;
  const bool table = method == kSaMethodGetTable || method == kSaMethodGetMulti;
  if (!table) {
    a.records.emplace_back(
        mad.begin() + kSaHeaderBytes,
        mad.begin() + kSaHeaderBytes +
            static_cast<std::ptrdiff_t>(std::min<std::size_t>(desc.size, kSaDataBytes)));
    return a;
  }
  const std::size_t stride = std::size_t{static_cast<uint16_t>(mad[44] << 8 | mad[45])} * 8;
  if (stride == 0) return a;
  std::size_t announced = kSaDataBytes / stride;
  const bool rmpp_active = (mad[26] & 0x1) != 0;
  if (rmpp_active && Get32(mad, 32) >= 20) announced = (Get32(mad, 32) - 20) / stride;
  const std::size_t here = std::min(announced, kSaDataBytes / stride);
  a.missing = announced - here;
  for (std::size_t i = 0; i < here; ++i) {
    const auto at = mad.begin() + static_cast<std::ptrdiff_t>(kSaHeaderBytes + i * stride);
    a.records.emplace_back(
        at, at + static_cast<std::ptrdiff_t>(std::min<std::size_t>(desc.size, stride)));
  }
  return a;
}

SaClientAnswer ParseSaTransfer(std::span<const uint8_t> transfer, const codec::FormatDesc& desc) {
  SaClientAnswer a;
  a.desc = &desc;
  if (transfer.size() < kSaHeaderBytes) {
    a.error = "an RMPP answer of " + std::to_string(transfer.size()) + " bytes (no SA header)";
    return a;
  }
  a.rmpp_bytes = transfer.size();
  a.rmpp_segments = std::max<std::size_t>(
      1, (transfer.size() - kSaHeaderBytes + kSaDataBytes - 1) / kSaDataBytes);
  a.status = static_cast<uint16_t>(transfer[4] << 8 | transfer[5]);
  const std::size_t stride =
      std::size_t{static_cast<uint16_t>(transfer[44] << 8 | transfer[45])} * 8;
  if (a.status != 0 || stride == 0) return a;
  const std::size_t data = transfer.size() - kSaHeaderBytes;
  if (data % stride != 0) {
    a.error = "an RMPP answer of " + std::to_string(data) + " data bytes is not whole records of " +
              std::to_string(stride);
    return a;
  }
  for (std::size_t at = kSaHeaderBytes; at < transfer.size(); at += stride)
    a.records.emplace_back(transfer.begin() + static_cast<std::ptrdiff_t>(at),
                           transfer.begin() + static_cast<std::ptrdiff_t>(
                                                  at + std::min<std::size_t>(desc.size, stride)));
  return a;
}

SaClientAnswer RunSaQuery(MadPort& port, uint16_t sm_lid, const SaClientRequest& request,
                          int timeout_ms, unsigned retries) {
  SaClientAnswer answer;
  MadBytes mad{};
  const codec::FormatDesc* desc = nullptr;
  if (std::string e = BuildSaRequest(request, mad, &desc); !e.empty()) {
    answer.error = e;
    return answer;
  }
  if (sm_lid == 0) {
    answer.error = "no SM LID known on " + port.Describe();
    return answer;
  }
  Transactions tx(port, TransactionOptions{1, timeout_ms, retries});
  MadAddress to;
  to.lid = sm_lid;
  to.qpn = 1;
  to.qkey = 0x80010000;
  bool done = false;
  tx.Submit(mad, to, [&](const TxResult& r) {
    done = true;
    if (r.status != TxStatus::kOk) {
      answer.error = "no answer from the SA at LID " + std::to_string(sm_lid);
      return;
    }
    answer = r.transfer.empty() ? ParseSaResponse(r.response, *desc)
                                : ParseSaTransfer(r.transfer, *desc);
  });
  if (!tx.Run())
    answer.error = tx.last_error();
  else if (!done)
    answer.error = "no answer";
  return answer;
}

void PrintSaAnswer(std::ostream& os, const SaClientAnswer& a) {
  if (!a.error.empty()) {
    os << "error: " << a.error << "\n";
    return;
  }
  if (a.status != 0) {
    os << "SA status: " << SaStatusText(a.status) << "\n";
    return;
  }
  for (const auto& rec : a.records) {
    os << a.desc->name << " dump:\n";
    codec::PrintFields(os, *a.desc, rec, 2);
  }
  os << a.records.size() << " records";
  if (a.missing) os << " (" << a.missing << " more announced, not carried by one MAD)";
  if (a.rmpp_bytes)
    os << " (RMPP: " << a.rmpp_bytes << " bytes in " << a.rmpp_segments << " segments)";
  os << "\n";
}

}  // namespace softib::sm
