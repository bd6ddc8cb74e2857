// SubnAdm MADs of the SA client (IBA 15.2): requests built from a client's template and the
// answers split into records. Pure byte work, no AL state (unit tested in sa_mad_test.cc).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace softib::al::sa {

inline constexpr uint8_t kSaClass = 0x03;
inline constexpr uint8_t kSaClassVersion = 2;
inline constexpr std::size_t kMadBytes = 256;
inline constexpr std::size_t kSaHeaderEnd = 56;  // SAData starts here
inline constexpr std::size_t kSaDataBytes = kMadBytes - kSaHeaderEnd;
inline constexpr std::size_t kNoticeBytes = 80;  // Notice (IBA 13.4.8.2)

// SubnAdm methods (IBA 15.2.2) and the attributes the AL itself asks for.
enum SaMethod : uint8_t {
  kGet = 0x01,
  kSet = 0x02,
  kGetResponse = 0x81,
  kReport = 0x06,
  kReportResponse = 0x86,
  kGetTable = 0x12,
  kGetTableResponse = 0x92,
  kGetMulti = 0x14,
  kGetTraceTable = 0x13,
  kDelete = 0x15,
  kDeleteResponse = 0x95,
};
inline constexpr uint16_t kNoticeAttribute = 0x0002;
inline constexpr uint16_t kInformInfoAttribute = 0x0003;
inline constexpr uint16_t kServiceRecordAttribute = 0x0031;
inline constexpr uint16_t kPathRecordAttribute = 0x0035;
inline constexpr uint16_t kMcMemberRecordAttribute = 0x0038;

// A request's fields; `attribute` (network order) goes to SAData, AttributeOffset covers it.
struct SaRequest {
  uint8_t method = kGet;
  uint16_t attribute_id = 0;
  uint32_t attribute_modifier = 0;
  uint64_t component_mask = 0;
  std::span<const uint8_t> attribute;
};

// True for the methods a client may send (Get, GetTable, GetMulti, GetTraceTable, Set,
// Delete) with an attribute that fits SAData.
bool IsClientRequest(const SaRequest& request);
// A 256-byte SubnAdm request MAD, TID low half `tid` (the agent sets the high half).
std::vector<uint8_t> BuildSaMad(const SaRequest& request, uint64_t tid);

// An SA answer (one MAD or a reassembled RMPP transfer: headers then the data).
struct SaAnswer {
  bool valid = false;        // a SubnAdm response MAD at least 56 bytes long
  uint16_t mad_status = 0;   // MAD Status, host order
  uint32_t record_size = 0;  // AttributeOffset * 8 (a Get: the whole SAData)
  uint32_t num_records = 0;
  std::vector<uint8_t> data;  // num_records * record_size bytes (empty on an error status)
};
SaAnswer ParseSaAnswer(std::span<const uint8_t> mad);

// The template with every field whose ComponentMask bit is clear zeroed (the codec's field
// table of the attribute), so that two requests that ask the same thing compare equal. An
// attribute the codec does not know is kept as it is.
std::vector<uint8_t> MaskedTemplate(uint16_t attribute_id, uint64_t component_mask,
                                    std::span<const uint8_t> attribute);

inline constexpr std::size_t kInformInfoBytes = 36;
// An InformInfo (IBA 13.4.8.3) asking for the generic trap `trap_number` (0xFFFF: all) of
// any port (LIDRangeBegin 0xFFFF), of any type and producer, to be reported to QP1;
// Subscribe 1, or 0 to end the subscription.
std::array<uint8_t, kInformInfoBytes> InformInfo(uint16_t trap_number, bool subscribe);

}  // namespace softib::al::sa
