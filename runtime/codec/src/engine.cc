// Lookup, decoding and validation over the generated descriptors.
#include "softib/codec/engine.h"

#include <algorithm>
#include <cstdio>

#include "softib/codec/bits.h"
#include "softib/codec/format_desc.h"
#include "str_cat.h"

namespace softib::codec {
namespace {

bool IsByteKind(FieldKind kind) {
  return kind == FieldKind::kGid || kind == FieldKind::kBytes || kind == FieldKind::kString;
}

std::string ElementName(const FieldDesc& field, uint32_t index) {
  std::string name(field.name);
  if (field.repeat > 1) name = StrCat({name, "[", std::to_string(index), "]"});
  return name;
}

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

const FormatDesc* FindFormat(std::string_view name) {
  for (const FormatDesc* desc : AllFormats())
    if (EqualsIgnoreCase(desc->name, name)) return desc;
  return nullptr;
}

const FormatDesc* FindAttribute(uint8_t mgmt_class, uint16_t attribute_id) {
  for (const FormatDesc* desc : AllFormats()) {
    if (desc->kind != FormatKind::kAttribute || desc->attribute_id != attribute_id) continue;
    const auto& classes = desc->mgmt_classes;
    if (std::find(classes.begin(), classes.end(), mgmt_class) != classes.end()) return desc;
  }
  return nullptr;
}

const MadClassDesc* FindMadClass(uint8_t mgmt_class) {
  for (const MadClassDesc* desc : AllMadClasses())
    if (desc->mgmt_class == mgmt_class) return desc;
  return nullptr;
}

const OpcodeDesc* FindOpcode(uint8_t opcode, std::string_view table) {
  const auto all = AllOpcodes();
  if (all.empty()) return nullptr;
  if (table.empty()) table = all.front().table;
  for (const OpcodeDesc& row : all)
    if (row.opcode == opcode && !row.name.empty() && EqualsIgnoreCase(row.table, table))
      return &row;
  return nullptr;
}

std::vector<FieldValue> DecodeFields(const FormatDesc& desc, std::span<const uint8_t> bytes) {
  std::vector<FieldValue> values;
  if (bytes.size() < desc.size) return values;
  for (const FieldDesc& field : desc.fields) {
    for (uint32_t i = 0; i < field.repeat; ++i) {
      FieldValue v;
      v.name = ElementName(field, i);
      v.desc = &field;
      v.index = i;
      const uint32_t offset = field.bit_offset + i * field.stride_bits;
      if (IsByteKind(field.kind)) {
        const auto first = bytes.begin() + offset / 8;
        v.bytes.assign(first, first + field.bit_width / 8);
      } else {
        v.value = GetBits(bytes, offset, field.bit_width);
      }
      values.push_back(std::move(v));
    }
  }
  return values;
}

std::vector<Problem> ValidateBytes(const FormatDesc& desc, std::span<const uint8_t> bytes) {
  std::vector<Problem> problems;
  if (bytes.size() < desc.size) {
    problems.push_back({"", StrCat({"need ", std::to_string(desc.size), " bytes, have ",
                                    std::to_string(bytes.size())})});
    return problems;
  }
  for (const FieldValue& v : DecodeFields(desc, bytes)) {
    const FieldDesc& field = *v.desc;
    if (field.reserved) {
      const bool zero = v.value == 0 && std::all_of(v.bytes.begin(), v.bytes.end(),
                                                    [](uint8_t b) { return b == 0; });
      if (!zero) {
        problems.push_back({v.name, IsByteKind(field.kind) ? "reserved field is not zero"
                                                           : StrCat({"reserved field is not zero (",
                                                                     Hex(v.value), ")"})});
      }
    }
    if (field.kind == FieldKind::kEnum && field.enum_desc != nullptr &&
        field.enum_desc->NameOf(v.value).empty()) {
      problems.push_back({v.name, StrCat({std::to_string(v.value), " is not a member of enum ",
                                          field.enum_desc->name})});
    }
  }
  return problems;
}

void CheckFits(std::vector<Problem>& problems, std::string_view field, uint64_t value,
               uint32_t width) {
  if (width >= 64 || (value >> width) == 0) return;
  problems.push_back({std::string(field), StrCat({"value ", Hex(value), " does not fit in ",
                                                  std::to_string(width), " bits"})});
}

void CheckFits(std::vector<Problem>& problems, std::string_view field, std::size_t index,
               uint64_t value, uint32_t width) {
  if (width >= 64 || (value >> width) == 0) return;
  CheckFits(problems, StrCat({field, "[", std::to_string(index), "]"}), value, width);
}

}  // namespace softib::codec
