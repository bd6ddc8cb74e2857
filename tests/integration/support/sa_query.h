// One query of the SA from a user process through the AL's SA client verbs: SendSaRequest,
// GetSaResponse (waits for the answer), CancelSaRequest (releases the request).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "softib/user/access_layer.h"
#include "user/verbs_al_proxy.h"

namespace softib::integration {

// The records' bytes land in `data` (`out->data_length` of them, `out->record_size` apart).
inline user::Status AskSa(const user::AlFile& al, uint64_t port_guid_be, uint8_t method,
                          uint16_t attribute, uint64_t component_mask,
                          std::span<const uint8_t> attribute_template, abi::SaRequestFlags flags,
                          abi::GetSaResponseOut* out, std::vector<uint8_t>* data) {
  abi::SendSaRequestIn in{};
  in.al = al.al;
  in.port_guid = port_guid_be;
  in.component_mask = component_mask;
  in.timeout_ms = 2000;
  in.retry_count = 3;
  in.attribute_id = attribute;
  in.method = method;
  in.flags = flags;
  in.attribute_length = static_cast<uint32_t>(attribute_template.size());
  abi::SendSaRequestOut req{};
  user::Status s = user::proxy::SendSaRequest(al.device, in, attribute_template, req);
  if (s != user::Status::SUCCESS) return s;
  data->assign(abi::kMaxRmppData, 0);
  s = user::proxy::GetSaResponse(al.device, {req.req}, *out, *data);
  data->resize(s == user::Status::SUCCESS ? out->data_length : 0);
  user::proxy::CancelSaRequest(al.device, {req.req});
  return s;
}

}  // namespace softib::integration
