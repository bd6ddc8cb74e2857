// The generic codec engine: decode, print, encode and validate any layout by
// walking its FormatDesc. The generated value structs use it for Print() and
// Validate(); `softib mad` uses it to work on layouts chosen at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "softib/codec/format_desc.h"

namespace softib::codec {

// One validation finding. `field` is "Name" or "Name[i]" for an element.
struct Problem {
  std::string field;
  std::string message;
};

inline void AppendProblems(std::vector<Problem>& problems, std::vector<Problem> more) {
  problems.insert(problems.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
}

// The decoded value of one field, or of one element of a repeated field.
struct FieldValue {
  std::string name;            // "P_KeyEntry[3]" for elements
  uint64_t value = 0;          // fields of at most 64 bits (kUInt, kEnum, kBool)
  std::vector<uint8_t> bytes;  // kGid, kBytes, kString
  const FieldDesc* desc = nullptr;
  uint32_t index = 0;  // element index (0 for a scalar)
};

// Case-insensitive lookup by layout name.
const FormatDesc* FindFormat(std::string_view name);
// The attribute with this id carried by this management class, or nullptr.
const FormatDesc* FindAttribute(uint8_t mgmt_class, uint16_t attribute_id);
const MadClassDesc* FindMadClass(uint8_t mgmt_class);
// The opcode row of `opcode` in table `table` (empty: the first table), or
// nullptr when the opcode is not defined.
const OpcodeDesc* FindOpcode(uint8_t opcode, std::string_view table = {});

// Every field in declaration order, repeated fields expanded element by
// element, reserved fields included. Requires bytes.size() >= desc.size.
std::vector<FieldValue> DecodeFields(const FormatDesc& desc, std::span<const uint8_t> bytes);

// The text Print() shows for a value: decimal up to 16 bits, 0x-hex padded to
// the width above, "NAME (n)" for enums, GID text, hex pairs, or text.
std::string FormatFieldValue(const FieldValue& value);

// One "Name:.......value" line per field; zero reserved fields are skipped.
void PrintFields(std::ostream& os, const FormatDesc& desc, std::span<const uint8_t> bytes,
                 int indent = 0);

// Sets field `name` ("Name" or "Name[i]", case-insensitive) from text: a
// number (decimal, 0x hex, 0b binary), an enum member name, true/false, a GID
// (IPv6 notation), hex bytes (separators ':', '-', ' ' allowed; shorter input
// is zero-filled) or a string. Returns an error message, or "" on success.
std::string SetField(const FormatDesc& desc, std::span<uint8_t> bytes, std::string_view name,
                     std::string_view text);

// Non-zero reserved fields and enum values that are not members.
std::vector<Problem> ValidateBytes(const FormatDesc& desc, std::span<const uint8_t> bytes);

// Used by generated Validate(): reports `value` when it does not fit in `width` bits.
void CheckFits(std::vector<Problem>& problems, std::string_view field, uint64_t value,
               uint32_t width);
void CheckFits(std::vector<Problem>& problems, std::string_view field, std::size_t index,
               uint64_t value, uint32_t width);

}  // namespace softib::codec
