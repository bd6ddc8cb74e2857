// GSI redirection, requester side (IBA 13.5.3.3): a response whose Status has "redirect
// required" (bit 1) and carries ClassPortInfo names where the class's agent really is; the
// AL re-sends the request there (same TID) and remembers the place per class and remote
// port, so later requests go straight to it. A redirect without ClassPortInfo is followed
// by a Get(ClassPortInfo) to the same agent first. The client sees only the final
// response; a redirect the AL cannot follow completes the send BAD_RESPONSE_ERR.
#include <endian.h>

#include <algorithm>

#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/mad_service.h"
#include "softib/rmpp/rmpp.h"

namespace softib::al {

using kernel::Status;

namespace {

constexpr uint16_t kStatusRedirect = 0x0002;  // IBA 13.4.7, bit 1
constexpr uint16_t kStatusCodeMask = 0x001C;  // bits 4..2: why a request was refused
constexpr uint16_t kAttrClassPortInfo = 0x0001;
constexpr uint32_t kClassPortInfoSize = 72;
// A chain of redirects longer than this is taken for a loop.
constexpr uint32_t kMaxRedirectHops = 4;

// Where a class's data (here: ClassPortInfo) starts in its MADs.
uint32_t DataOffset(uint8_t mgmt_class) {
  if (mgmt_class == mad::kClassSubnAdm) return 56;  // + RMPP and SA headers
  switch (mgmt_class) {
    case 0x04:  // PerfMgt: 40 reserved bytes
    case 0x05:  // BM: B_Key and reserved
    case 0x06:  // DevMgt: RMPP header and reserved
    case 0x10:
    case 0x12:  // BIS
    case 0x21:  // CC: CC_Key and reserved
      return 64;
    default:
      break;
  }
  if (mgmt_class >= 0x30 && mgmt_class <= 0x4F) return 40;  // vendor range 2: + OUI
  return 24;
}

uint32_t Be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

}  // namespace

void SpecialQp::ApplyRedirectLocked(MadSend& send) {
  if (smi() || mad::IsResponse(send.mad.data())) return;
  RedirectState& r = send.redirect;
  r.eligible = send.response_expected;
  r.original = send.to;
  r.retry_count = send.retries_left;
  r.segmented = send.rmpp != nullptr;
  if (!r.eligible || send.to.remote_qpn != 1) return;
  auto it = redirects_.find({send.mgmt_class, send.to.av.dlid});
  if (it == redirects_.end()) return;
  send.to = it->second;
  r.redirected = true;
}

bool SpecialQp::OnRedirectLocked(const std::shared_ptr<MadSend>& send, const uint8_t* response,
                                 std::size_t length, After& after) {
  RedirectState& r = send->redirect;
  if (!r.eligible) return false;
  const uint32_t offset = DataOffset(mad::Class(response));
  const bool has_info =
      mad::AttributeId(response) == kAttrClassPortInfo && length >= offset + kClassPortInfoSize;
  if (r.querying) {  // the answer to our Get(ClassPortInfo)
    send->mad = std::move(r.request);
    send->tid = r.request_tid;
    r.querying = false;
    if (!has_info || (mad::Status(response) & kStatusCodeMask) != 0) {
      Finish(send, abi::WcStatus::BAD_RESPONSE_ERR, after);
      return true;
    }
    FollowRedirectLocked(send, response + offset, after);
    return true;
  }
  if ((mad::Status(response) & kStatusRedirect) == 0) return false;
  if (has_info) {
    FollowRedirectLocked(send, response + offset, after);
  } else {
    QueryClassPortInfoLocked(send, after);
  }
  return true;
}

// ClassPortInfo's Redirect* fields (IBA 13.4.8.1) become the send's new address.
void SpecialQp::FollowRedirectLocked(const std::shared_ptr<MadSend>& send, const uint8_t* info,
                                     After& after) {
  RedirectState& r = send->redirect;
  const RedirectKey key{send->mgmt_class, r.original.av.dlid};
  const uint8_t* gid = info + 8;
  const bool has_gid = std::any_of(gid, gid + 16, [](uint8_t b) { return b != 0; });
  const uint16_t lid = static_cast<uint16_t>(info[28] << 8 | info[29]);
  const uint16_t pkey = static_cast<uint16_t>(info[30] << 8 | info[31]);
  const uint32_t qpn = Be32(info + 32) & 0xFFFFFF;
  const uint32_t qkey = Be32(info + 36);
  MadAddress to;
  to.av.dlid = lid;
  to.av.sl = info[25] >> 4;
  to.av.src_path_bits = r.original.av.src_path_bits;
  if (has_gid) {
    to.av.grh_present = 1;
    std::copy(gid, gid + 16, to.av.grh.dgid.raw);
    to.av.grh.traffic_class = info[24];
    to.av.grh.flow_label = Be32(info + 24) & 0xFFFFF;
    to.av.grh.hop_limit = 0xFF;
  }
  to.remote_qpn = qpn;
  to.remote_qkey = qkey;
  to.pkey_index = r.original.pkey_index;
  // QP0 carries no GMP; QP1 has one Q_Key; LID 0 asks for a PathRecord to the GID, which
  // the AL does not look up (no GID: nowhere to go); a long chain is a loop.
  bool valid =
      qpn != 0 && (qpn != 1 || qkey == mad::kGsiQkey) && lid != 0 && r.hops < kMaxRedirectHops;
  if (valid && pkey != 0) {
    std::vector<uint16_t> table;  // the port cache (al_internal.h), read under the CA's lock
    valid = false;
    if (ca_->CachedPkeyTable(port_, &table)) {
      for (uint32_t i = 0; i < table.size() && !valid; ++i) {
        if (table[i] != 0 && (table[i] & 0x7FFF) == (pkey & 0x7FFF)) {
          to.pkey_index = static_cast<uint16_t>(i);
          valid = true;
        }
      }
    }
  }
  if (!valid) {
    redirects_.erase(key);
    Finish(send, abi::WcStatus::BAD_RESPONSE_ERR, after);
    return;
  }
  if (r.original.remote_qpn == 1) redirects_[key] = to;
  ++r.hops;
  r.redirected = true;
  send->to = to;
  send->retries_left = r.retry_count;
  redirected.fetch_add(1, std::memory_order_relaxed);
  if (ResendLocked(send) != Status::SUCCESS) Finish(send, abi::WcStatus::LOCAL_QP_OP_ERR, after);
}

// Get(ClassPortInfo) of the class, to where the redirect came from, in place of the request
// (kept aside) until its answer comes.
void SpecialQp::QueryClassPortInfoLocked(const std::shared_ptr<MadSend>& send, After& after) {
  RedirectState& r = send->redirect;
  const uint8_t* request = send->mad.data();
  std::vector<uint8_t> query(mad::kMadSize, 0);
  std::copy(request, request + 4, query.begin());  // base version, class, class version
  query[3] = mad::kMethodGet;
  const uint8_t mgmt_class = mad::Class(request);
  if (mgmt_class >= 0x30 && mgmt_class <= 0x4F) {
    std::copy(request + 37, request + 40, query.begin() + 37);  // the OUI
  } else if (mgmt_class == mad::kClassSubnAdm) {
    std::copy(request + 36, request + 44, query.begin() + 36);  // the SM_Key
  }
  // The agent's id stays in the high half; the low half marks the AL's own query.
  const uint64_t tid = (send->tid & ~uint64_t{0xFFFFFFFF}) | 0x80000000u | next_query_tid_++;
  mad::SetTid(query.data(), tid);
  query[16] = kAttrClassPortInfo >> 8;
  query[17] = kAttrClassPortInfo & 0xFF;
  r.querying = true;
  r.request = std::move(send->mad);
  r.request_tid = send->tid;
  send->rmpp.reset();
  send->mad = std::move(query);
  send->tid = tid;
  send->retries_left = r.retry_count;
  if (ResendLocked(send) != Status::SUCCESS) Finish(send, abi::WcStatus::LOCAL_QP_OP_ERR, after);
}

// The send goes out again from the start: its single MAD, or its whole RMPP transfer.
Status SpecialQp::ResendLocked(const std::shared_ptr<MadSend>& send) {
  send->waiting = false;
  if (send->redirect.segmented && !send->redirect.querying) {
    send->rmpp = std::make_unique<RmppSender>(send->mad, send->redirect.retry_count);
    After unused;  // starting a transfer queues nothing
    return StartRmppLocked(send, unused);
  }
  return PostLocked(send, send->mad.data(), send->to);
}

// No answer from where a redirect pointed: the cached place is forgotten and a retry goes
// to the original agent (an RMPP transfer in progress keeps its destination).
void SpecialQp::RedirectTimeoutLocked(MadSend& send) {
  RedirectState& r = send.redirect;
  if (!r.redirected) return;
  redirects_.erase({send.mgmt_class, r.original.av.dlid});
  if (send.rmpp) return;
  if (r.querying) {
    send.mad = std::move(r.request);
    send.tid = r.request_tid;
    r.querying = false;
  }
  send.to = r.original;
  r.redirected = false;
  r.hops = 0;
}

}  // namespace softib::al
