#include "runtime/al/src/sa/sa_mad.h"

#include <endian.h>

#include <algorithm>
#include <cstring>

#include "softib/codec/engine.h"

namespace softib::al::sa {

namespace {

uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

void Store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// Clears `width` bits from `bit` (MSB of byte 0 is bit 0) of bytes, within its size.
void ClearBits(std::span<uint8_t> bytes, uint32_t bit, uint32_t width) {
  for (uint32_t b = bit; b < bit + width && b / 8 < bytes.size(); ++b) {
    bytes[b / 8] &= static_cast<uint8_t>(~(0x80u >> (b % 8)));
  }
}

bool IsResponse(uint8_t method) { return (method & 0x80) != 0; }

}  // namespace

bool IsClientRequest(const SaRequest& request) {
  switch (request.method) {
    case kGet:
    case kSet:
    case kGetTable:
    case kGetMulti:
    case kGetTraceTable:
    case kDelete:
      break;
    default:
      return false;
  }
  return request.attribute_id != 0 && request.attribute.size() <= kSaDataBytes;
}

std::vector<uint8_t> BuildSaMad(const SaRequest& request, uint64_t tid) {
  std::vector<uint8_t> mad(kMadBytes, 0);
  mad[0] = 1;  // BaseVersion
  mad[1] = kSaClass;
  mad[2] = kSaClassVersion;
  mad[3] = request.method;
  const uint64_t tid_be = htobe64(tid);
  std::memcpy(&mad[8], &tid_be, 8);
  Store16(&mad[16], request.attribute_id);
  const uint32_t modifier = htobe32(request.attribute_modifier);
  std::memcpy(&mad[20], &modifier, 4);
  // RMPP header (24..35) zero: a request fits one MAD. SA header: SM_Key 0, then the
  // AttributeOffset in 8-byte words (IBA 15.2.1.1), ComponentMask.
  Store16(&mad[44], static_cast<uint16_t>((request.attribute.size() + 7) / 8));
  const uint64_t mask = htobe64(request.component_mask);
  std::memcpy(&mad[48], &mask, 8);
  if (!request.attribute.empty()) {
    std::memcpy(&mad[kSaHeaderEnd], request.attribute.data(), request.attribute.size());
  }
  return mad;
}

SaAnswer ParseSaAnswer(std::span<const uint8_t> mad) {
  SaAnswer answer;
  if (mad.size() < kSaHeaderEnd || mad[1] != kSaClass || !IsResponse(mad[3])) return answer;
  answer.valid = true;
  answer.mad_status = Load16(&mad[4]);
  if (answer.mad_status != 0) return answer;
  const std::span<const uint8_t> data = mad.subspan(kSaHeaderEnd);
  const uint32_t offset = Load16(&mad[44]) * 8u;
  const bool table = mad[3] == kGetTableResponse || (mad[3] & 0x7F) == kGetMulti ||
                     (mad[3] & 0x7F) == kGetTraceTable;
  if (!table) {
    // Get/Set/Delete answer one record: the whole SAData (AttributeOffset may be 0).
    answer.record_size = offset != 0 ? std::min<uint32_t>(offset, data.size()) : data.size();
    answer.num_records = 1;
  } else {
    answer.record_size = offset;
    answer.num_records = offset != 0 ? static_cast<uint32_t>(data.size() / offset) : 0;
  }
  answer.data.assign(data.begin(), data.begin() + answer.record_size * answer.num_records);
  return answer;
}

std::vector<uint8_t> MaskedTemplate(uint16_t attribute_id, uint64_t component_mask,
                                    std::span<const uint8_t> attribute) {
  std::vector<uint8_t> out(attribute.begin(), attribute.end());
  const codec::FormatDesc* desc = codec::FindAttribute(kSaClass, attribute_id);
  if (desc == nullptr) return out;
  for (const codec::FieldDesc& field : desc->fields) {
    const bool selected = field.component >= 0 && field.component < 64 &&
                          ((component_mask >> field.component) & 1) != 0;
    if (selected) continue;
    for (uint32_t i = 0; i < field.repeat; ++i) {
      ClearBits(out, field.bit_offset + i * field.stride_bits, field.bit_width);
    }
  }
  return out;
}

std::array<uint8_t, kInformInfoBytes> InformInfo(uint16_t trap_number, bool subscribe) {
  std::array<uint8_t, kInformInfoBytes> info{};
  info[16] = info[17] = 0xFF;  // LIDRangeBegin 0xFFFF: every LID
  info[22] = 1;                // IsGeneric
  info[23] = subscribe ? 1 : 0;
  info[24] = info[25] = 0xFF;  // Type: all
  info[26] = static_cast<uint8_t>(trap_number >> 8);
  info[27] = static_cast<uint8_t>(trap_number);
  info[30] = 1;                           // QPN 1 (bits 31..8 of the word at 28)
  info[31] = 19;                          // RespTimeValue
  info[33] = info[34] = info[35] = 0xFF;  // ProducerType: all
  return info;
}

}  // namespace softib::al::sa
