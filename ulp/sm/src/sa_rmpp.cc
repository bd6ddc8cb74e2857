// GetTable and GetMulti answers by RMPP (IBA 15.3, 13.6): the SA headers once, then every
// record at AttributeOffset; the transport (the AL's RMPP sender) cuts the transfer into
// segments of 200 bytes, with windows, ACKs and retransmission. A table beyond the largest
// transfer the transport carries is refused with ERR_NO_RESOURCES rather than cut short,
// so that a requester never takes part of a table for the whole of it.
#include <cstring>

#include "sa_internal.h"

namespace softib::sm {

void SubnetAdmin::AnswerByRmpp(SaOutgoing& reply, SaResult& result, std::size_t stride) {
  MadBytes& m = reply.mad;
  std::size_t bytes = result.records.size() * stride;
  if (bytes > rmpp_limit_ - kSaHeaderBytes) {
    ++stats_.tables_too_large;
    ++stats_.errors;
    m[4] = static_cast<uint8_t>(kSaStatusNoResources >> 8);
    m[5] = static_cast<uint8_t>(kSaStatusNoResources);
    result.records.clear();
    bytes = 0;
  }
  ++stats_.rmpp_tables;
  m[24] = sa::kRmppVersion;
  m[25] = sa::kRmppTypeData;
  m[26] = static_cast<uint8_t>(sa::kRmppNoRespTime << 3 | 0x1);  // Active; the AL sets First/Last
  reply.transfer.assign(kSaHeaderBytes + bytes, 0);
  std::memcpy(reply.transfer.data(), m.data(), kSaHeaderBytes);
  for (std::size_t i = 0; i < result.records.size(); ++i)
    std::memcpy(reply.transfer.data() + kSaHeaderBytes + i * stride, result.records[i].data(),
                result.records[i].size());
}

}  // namespace softib::sm
