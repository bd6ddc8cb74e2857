// MADs as text: decode a 256-byte MAD (common header -> class format -> the
// attribute named by AttributeID) and encode one from field=value arguments,
// all through the generated layout descriptors (softib::codec).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "softib/codec/format_desc.h"

namespace softib::madtool {

inline constexpr std::size_t kMadSize = 256;
inline constexpr std::size_t kMadHeaderSize = 24;

// Collects one-line problems with the input; the command exits 2 when any.
using Errors = std::vector<std::string>;

// How a management class lays out its MAD: the whole-MAD format and the field
// that holds the attribute.
struct ClassLayout {
  const codec::FormatDesc* format = nullptr;     // MadHeader when the class has no own format
  const codec::FieldDesc* data_field = nullptr;  // the attribute area, if the format names one
  std::size_t data_offset = kMadHeaderSize;      // where the attribute starts
  std::size_t data_size = kMadSize - kMadHeaderSize;
};
ClassLayout LayoutOfClass(uint8_t mgmt_class);

// Prints a layout's fields, smpquery style, indented by `indent`.
void PrintLayout(std::ostream& os, const codec::FormatDesc& desc, std::span<const uint8_t> bytes,
                 int indent);

// Decodes a whole MAD. Problems (too short, unknown attribute...) go to `errors`;
// whatever can be decoded is still printed.
void DecodeMad(std::ostream& os, std::span<const uint8_t> mad, int indent, Errors* errors);

// Decodes `bytes` as layout `desc` (a format, attribute or header).
void DecodeAs(std::ostream& os, const codec::FormatDesc& desc, std::span<const uint8_t> bytes,
              Errors* errors);

// Finds a layout by name; on failure says so in `errors`.
const codec::FormatDesc* FindLayout(std::string_view name, Errors* errors);

// Parses a management class given as a name ("SubnAdm") or a number ("0x03").
std::optional<uint8_t> ParseClass(std::string_view text);

struct EncodeRequest {
  std::string layout;
  std::vector<std::string> assignments;  // "Field=value" ("mad.Field=value": header field)
  std::optional<std::string> mgmt_class;
  std::optional<std::string> method;
  std::optional<std::string> attribute_modifier;
  std::optional<std::string> transaction_id;
};

// Encodes the request: a whole MAD when the layout is an attribute, else the
// layout's bytes alone. Returns nothing and fills `errors` on bad input.
std::optional<std::vector<uint8_t>> Encode(const EncodeRequest& request, Errors* errors);

// Every management class and layout, for `softib mad list`.
void ListLayouts(std::ostream& os);

// The attribute's management class to put in a MAD encoded for it.
uint8_t DefaultClassOf(const codec::FormatDesc& attribute);

}  // namespace softib::madtool
