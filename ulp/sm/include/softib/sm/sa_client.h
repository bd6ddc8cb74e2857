// The requester's side of the SA, for `softib-sm --query`: a request built from an attribute
// name and Field=value pairs (each sets the field and its ComponentMask bit), sent to the SM
// LID, and the records of the answer printed field by field, as saquery prints them.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "softib/codec/format_desc.h"
#include "softib/sm/mad_port.h"

namespace softib::sm {

struct SaClientRequest {
  std::string attribute;  // "NodeRecord" or saquery's short names: NR, PIR, PR, SWIR, ...
  std::vector<std::pair<std::string, std::string>> fields;  // Field=value
  uint8_t method = 0x12;                                    // GetTable
};

struct SaClientAnswer {
  std::string error;  // transport or usage problem; "" otherwise
  uint16_t status = 0;
  const codec::FormatDesc* desc = nullptr;
  std::vector<std::vector<uint8_t>> records;
  // Records the answer announced (RMPP PayloadLength) beyond what the one MAD carried.
  std::size_t missing = 0;
  // An answer that came as a reassembled RMPP transfer: its bytes and DATA segments.
  std::size_t rmpp_bytes = 0;
  std::size_t rmpp_segments = 0;
};

// The request MAD; "" or an error message.
std::string BuildSaRequest(const SaClientRequest& request, MadBytes& mad,
                           const codec::FormatDesc** desc);
// The records of one response MAD to a request for `desc`.
SaClientAnswer ParseSaResponse(const MadBytes& mad, const codec::FormatDesc& desc);
// The records of a reassembled RMPP transfer (SA headers, then records at AttributeOffset).
SaClientAnswer ParseSaTransfer(std::span<const uint8_t> transfer, const codec::FormatDesc& desc);
// Sends the request to `sm_lid` (QP1) and waits for the answer.
SaClientAnswer RunSaQuery(MadPort& port, uint16_t sm_lid, const SaClientRequest& request,
                          int timeout_ms = 1000, unsigned retries = 2);
// "ERR_NO_RECORDS" and the like.
std::string SaStatusText(uint16_t status);
void PrintSaAnswer(std::ostream& os, const SaClientAnswer& answer);

}  // namespace softib::sm
