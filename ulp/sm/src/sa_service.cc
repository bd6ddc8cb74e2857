// ServiceRecord (15.2.5.14): Set registers or refreshes a service (keyed by ServiceID,
// ServiceGID and ServiceP_Key), Delete removes the records that match, Get/GetTable read
// them. ServiceLease is in seconds, 0xFFFFFFFF forever; an expired service disappears.
#include <algorithm>
#include <cmath>

#include "sa_internal.h"

namespace softib::sm {
namespace {

constexpr uint32_t kInfiniteLease = 0xFFFFFFFF;

bool SameKey(const mad::ServiceRecord& a, const mad::ServiceRecord& b) {
  return a.ServiceID == b.ServiceID && a.ServiceGID == b.ServiceGID &&
         a.ServiceP_Key == b.ServiceP_Key;
}

}  // namespace

void SubnetAdmin::ExpireServices(double now) {
  std::erase_if(services_, [now](const Service& s) { return s.expires >= 0 && s.expires <= now; });
}

SaResult SubnetAdmin::Services(const SaRequest& r) {
  SaResult out;
  out.record_size = mad::ServiceRecord::kSize;
  const auto& desc = mad::ServiceRecord::Desc();
  mad::ServiceRecord q;
  q.Unpack(r.data.first(mad::ServiceRecord::kSize));

  // What a requester sees: the lease left, rounded up.
  auto visible = [&](const Service& s) {
    mad::ServiceRecord rec = s.record;
    if (s.expires >= 0)
      rec.ServiceLease = static_cast<uint32_t>(std::ceil(std::max(0.0, s.expires - r.now)));
    return rec;
  };

  if (r.method == kSaMethodSet) {
    const uint64_t need =
        sa::ComponentBit(desc, "ServiceID") | sa::ComponentBit(desc, "ServiceGID");
    if ((r.component_mask & need) != need) {
      out.status = kSaStatusInsufficientComponents;
      return out;
    }
    if (!PortByGid(q.ServiceGID)) {
      out.status = kSaStatusInvalidGid;
      return out;
    }
    if (!(r.component_mask & sa::ComponentBit(desc, "ServiceP_Key"))) q.ServiceP_Key = 0xFFFF;
    Service s{q, q.ServiceLease == kInfiniteLease ? -1.0 : r.now + q.ServiceLease};
    auto it = std::find_if(services_.begin(), services_.end(),
                           [&](const Service& e) { return SameKey(e.record, q); });
    if (it != services_.end())
      *it = s;
    else
      services_.push_back(s);
    out.Add(visible(s).Pack());
    return out;
  }

  if (r.method == kSaMethodDelete) {
    const uint64_t need =
        sa::ComponentBit(desc, "ServiceID") | sa::ComponentBit(desc, "ServiceGID");
    if ((r.component_mask & need) != need) {
      out.status = kSaStatusInsufficientComponents;
      return out;
    }
    for (auto it = services_.begin(); it != services_.end();) {
      const auto bytes = it->record.Pack();
      if (sa::ComponentsMatch(desc, r.component_mask, r.data, bytes)) {
        out.Add(visible(*it).Pack());
        it = services_.erase(it);
      } else {
        ++it;
      }
    }
    if (out.records.empty())
      out.status = kSaStatusNoRecords;
    else
      out.records.resize(1);  // the answer carries one (the first) deleted record
    return out;
  }

  for (const Service& s : services_) {
    const auto bytes = visible(s).Pack();
    if (sa::ComponentsMatch(desc, r.component_mask & ~sa::ComponentBit(desc, "ServiceLease"),
                            r.data, bytes))
      out.Add(bytes);
  }
  return out;
}

}  // namespace softib::sm
