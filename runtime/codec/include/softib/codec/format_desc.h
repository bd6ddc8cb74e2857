// Descriptions of MAD formats, attributes and wire headers, emitted by codegen
// from idl/ (generated/codec/<module>.cc, generated/codec/registry.cc) and
// read by the generic codec engine (engine.h: decode/encode/print by field
// name) and by `softib mad`.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace softib::codec {

enum class FieldKind : uint8_t {
  kUInt,    // unsigned integer, at most 64 bits
  kEnum,    // unsigned integer whose valid values are an enum's members
  kBool,    // one bit (or more) read as true/false
  kGid,     // 128 bits, printed as a GID
  kBytes,   // opaque bytes (width a multiple of 8, byte-aligned)
  kString,  // NUL-padded text
};

struct EnumValue {
  std::string_view name;
  uint64_t value;
};

struct EnumDesc {
  std::string_view name;
  std::span<const EnumValue> values;

  // Returns the member name, or an empty view when `value` is not a member.
  std::string_view NameOf(uint64_t value) const {
    for (const auto& v : values)
      if (v.value == value) return v.name;
    return {};
  }
};

struct FieldDesc {
  std::string_view name;
  uint32_t bit_offset;   // MSB of element 0, counted from the MSB of byte 0
  uint32_t bit_width;    // width of one element in bits
  uint32_t repeat;       // number of elements (1 for a scalar)
  uint32_t stride_bits;  // distance between elements
  FieldKind kind;
  bool reserved;              // must be zero
  const EnumDesc* enum_desc;  // kEnum only
  int16_t component;          // SA ComponentMask bit, or -1
};

enum class FormatKind : uint8_t { kFormat, kHeader, kAttribute };

struct FormatDesc {
  std::string_view name;
  FormatKind kind;
  uint32_t size;  // bytes
  std::span<const FieldDesc> fields;
  // Attributes only:
  uint16_t attribute_id;
  std::span<const uint8_t> mgmt_classes;  // management classes that carry it
  std::string_view modifier;              // meaning of the attribute modifier
  std::string_view doc;
};

struct MadClassDesc {
  std::string_view name;
  uint8_t mgmt_class;
  uint8_t class_version;
  std::span<const EnumValue> methods;
};

// One row of an `opcodes` table (the BTH opcode table): which extension
// headers follow the BTH, in wire order, and whether a payload follows.
struct OpcodeDesc {
  std::string_view table;  // e.g. "BthOpcode"
  std::string_view name;   // e.g. "RC_SEND_ONLY_WITH_IMMEDIATE"
  uint8_t opcode;
  std::span<const std::string_view> headers;  // header layout names, e.g. {"ImmDt"}
  bool payload;
};

// Registries (generated).
// AllOpcodes() holds 256 rows per opcodes table, row i of a table for opcode
// value i, so AllOpcodes()[opcode] works for the (single) BTH table; rows of
// undefined opcodes have an empty name. FindOpcode() (engine.h) skips them.
std::span<const OpcodeDesc> AllOpcodes();
std::span<const FormatDesc* const> AllFormats();
std::span<const MadClassDesc* const> AllMadClasses();
std::span<const EnumDesc* const> AllEnums();

}  // namespace softib::codec

// One include gives the whole codec API: the engine works on these descriptors.
#include "softib/codec/engine.h"  // IWYU pragma: export
