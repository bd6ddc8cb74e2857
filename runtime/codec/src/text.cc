// Field values as text: printing (smpquery style) and parsing for SetField.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <ostream>

#include "softib/codec/bits.h"
#include "softib/codec/engine.h"
#include "str_cat.h"

namespace softib::codec {
namespace {

constexpr std::size_t kValueColumn = 32;  // where values start, as smpquery prints them

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string HexDigits(uint64_t value, int digits) {
  char text[24];
  std::snprintf(text, sizeof text, "%0*llx", digits, static_cast<unsigned long long>(value));
  return text;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = Lower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Decimal, 0x hexadecimal or 0b binary, without sign; nullopt on junk or overflow.
std::optional<uint64_t> ParseUnsigned(std::string_view text) {
  text = Trim(text);
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Hex bytes with optional 0x prefix and ':', '-', ' ' or '.' separators.
std::optional<std::vector<uint8_t>> ParseHexBytes(std::string_view text) {
  text = Trim(text);
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  std::vector<uint8_t> out;
  int high = -1;
  for (char c : text) {
    if (c == ':' || c == '-' || c == ' ' || c == '.') {
      if (high >= 0) return std::nullopt;  // separators only between whole bytes
      continue;
    }
    const int digit = HexValue(c);
    if (digit < 0) return std::nullopt;
    if (high < 0) {
      high = digit;
    } else {
      out.push_back(static_cast<uint8_t>(high << 4 | digit));
      high = -1;
    }
  }
  if (high >= 0) return std::nullopt;
  return out;
}

// Groups of an IPv6 address side ("fe80:0:1" or "::ffff:1.2.3.4" tails).
bool ParseGroups(std::string_view text, std::vector<uint16_t>& groups) {
  if (text.empty()) return true;
  while (true) {
    const std::size_t colon = text.find(':');
    const std::string_view group = text.substr(0, colon);
    if (colon == std::string_view::npos && group.find('.') != std::string_view::npos) {
      uint8_t octets[4];
      std::string_view rest = group;
      for (int i = 0; i < 4; ++i) {
        const std::size_t dot = rest.find('.');
        if ((dot == std::string_view::npos) != (i == 3)) return false;
        const auto octet = ParseUnsigned(rest.substr(0, dot));
        if (!octet || *octet > 255 || rest.substr(0, dot).starts_with("0x")) return false;
        octets[i] = static_cast<uint8_t>(*octet);
        if (dot != std::string_view::npos) rest.remove_prefix(dot + 1);
      }
      groups.push_back(static_cast<uint16_t>(octets[0] << 8 | octets[1]));
      groups.push_back(static_cast<uint16_t>(octets[2] << 8 | octets[3]));
      return true;
    }
    if (group.empty() || group.size() > 4) return false;
    uint16_t value = 0;
    for (char c : group) {
      const int digit = HexValue(c);
      if (digit < 0) return false;
      value = static_cast<uint16_t>(value << 4 | digit);
    }
    groups.push_back(value);
    if (colon == std::string_view::npos) return true;
    text.remove_prefix(colon + 1);
  }
}

// IPv6 text (with "::" and a dotted IPv4 tail) into 16 bytes.
std::optional<std::vector<uint8_t>> ParseGid(std::string_view text) {
  text = Trim(text);
  std::vector<uint16_t> head, tail;
  const std::size_t gap = text.find("::");
  if (gap == std::string_view::npos) {
    if (!ParseGroups(text, head) || head.size() != 8) return std::nullopt;
  } else {
    if (text.find("::", gap + 1) != std::string_view::npos) return std::nullopt;
    if (!ParseGroups(text.substr(0, gap), head) || !ParseGroups(text.substr(gap + 2), tail))
      return std::nullopt;
    if (head.size() + tail.size() > 7) return std::nullopt;
    head.resize(8 - tail.size(), 0);
    head.insert(head.end(), tail.begin(), tail.end());
  }
  std::vector<uint8_t> out;
  for (uint16_t g : head) {
    out.push_back(static_cast<uint8_t>(g >> 8));
    out.push_back(static_cast<uint8_t>(g));
  }
  return out;
}

std::string FormatGid(const std::vector<uint8_t>& bytes) {
  std::string text;
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    if (!text.empty()) text += ':';
    text += HexDigits(static_cast<uint64_t>(bytes[i]) << 8 | bytes[i + 1], 4);
  }
  return text;
}

std::string FormatString(const std::vector<uint8_t>& bytes) {
  std::string text;
  for (uint8_t b : bytes) {
    if (b == 0) break;
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      text += static_cast<char>(b);
    } else {
      text += "\\x";
      text += HexDigits(b, 2);
    }
  }
  return text;
}

std::string FitError(uint64_t value, uint32_t width) {
  return StrCat(
      {"value ", std::to_string(value), " does not fit in ", std::to_string(width), " bits"});
}

// Parses `text` for one scalar (<= 64-bit) element of `field`.
std::string ParseScalar(const FieldDesc& field, std::string_view text, uint64_t& value) {
  text = Trim(text);
  std::optional<uint64_t> parsed;
  if (field.kind == FieldKind::kEnum && field.enum_desc != nullptr) {
    for (const EnumValue& member : field.enum_desc->values)
      if (EqualsIgnoreCase(member.name, text)) parsed = member.value;
  } else if (field.kind == FieldKind::kBool) {
    if (EqualsIgnoreCase(text, "true") || EqualsIgnoreCase(text, "yes")) parsed = 1;
    if (EqualsIgnoreCase(text, "false") || EqualsIgnoreCase(text, "no")) parsed = 0;
  }
  if (!parsed) parsed = ParseUnsigned(text);
  if (!parsed) {
    std::string error = StrCat({"'", text, "' is not a number"});
    if (field.kind == FieldKind::kEnum && field.enum_desc != nullptr)
      error += StrCat({" or a member of enum ", field.enum_desc->name});
    return error;
  }
  if (field.bit_width < 64 && (*parsed >> field.bit_width) != 0)
    return FitError(*parsed, field.bit_width);
  value = *parsed;
  return "";
}

std::string ParseByteField(const FieldDesc& field, std::string_view text,
                           std::vector<uint8_t>& out) {
  const std::size_t size = field.bit_width / 8;
  std::optional<std::vector<uint8_t>> parsed;
  if (field.kind == FieldKind::kString) {
    if (text.size() > size)
      return StrCat({"text of ", std::to_string(text.size()), " bytes does not fit in ",
                     std::to_string(size)});
    parsed.emplace(text.begin(), text.end());
  } else if (field.kind == FieldKind::kGid && Trim(text).find(':') != std::string_view::npos &&
             size == 16) {
    parsed = ParseGid(text);
    if (!parsed) return StrCat({"'", text, "' is not a GID"});
  } else {
    parsed = ParseHexBytes(text);
    if (!parsed) return StrCat({"'", text, "' is not hex bytes"});
    if (parsed->size() > size)
      return StrCat(
          {std::to_string(parsed->size()), " bytes do not fit in ", std::to_string(size)});
  }
  out = std::move(*parsed);
  out.resize(size, 0);
  return "";
}

}  // namespace

std::string FormatFieldValue(const FieldValue& v) {
  if (v.desc == nullptr) return std::to_string(v.value);
  const FieldDesc& field = *v.desc;
  switch (field.kind) {
    case FieldKind::kGid:
      return FormatGid(v.bytes);
    case FieldKind::kBytes: {
      std::string text;
      for (uint8_t b : v.bytes) text += HexDigits(b, 2);
      return text;
    }
    case FieldKind::kString:
      return FormatString(v.bytes);
    case FieldKind::kEnum:
      if (field.enum_desc != nullptr) {
        const std::string_view name = field.enum_desc->NameOf(v.value);
        if (!name.empty()) return StrCat({name, " (", std::to_string(v.value), ")"});
      }
      return StrCat({std::to_string(v.value), " (unknown)"});
    case FieldKind::kUInt:
    case FieldKind::kBool:
      break;
  }
  if (field.bit_width <= 16) return std::to_string(v.value);
  return StrCat({"0x", HexDigits(v.value, static_cast<int>((field.bit_width + 3) / 4))});
}

void PrintFields(std::ostream& os, const FormatDesc& desc, std::span<const uint8_t> bytes,
                 int indent) {
  for (const FieldValue& v : DecodeFields(desc, bytes)) {
    if (v.desc->reserved && v.value == 0 &&
        std::all_of(v.bytes.begin(), v.bytes.end(), [](uint8_t b) { return b == 0; }))
      continue;
    const std::size_t margin = static_cast<std::size_t>(indent > 0 ? indent : 0);
    std::string line(margin, ' ');
    line += v.name;
    line += ':';
    if (line.size() < margin + kValueColumn) line.resize(margin + kValueColumn, '.');
    line += FormatFieldValue(v);
    os << line << '\n';
  }
}

std::string SetField(const FormatDesc& desc, std::span<uint8_t> bytes, std::string_view name,
                     std::string_view text) {
  if (bytes.size() < desc.size)
    return StrCat(
        {"need ", std::to_string(desc.size), " bytes, have ", std::to_string(bytes.size())});
  name = Trim(name);
  std::optional<uint32_t> index;
  if (const std::size_t open = name.find('['); open != std::string_view::npos) {
    if (name.back() != ']') return StrCat({"bad field name '", name, "'"});
    const auto parsed = ParseUnsigned(name.substr(open + 1, name.size() - open - 2));
    if (!parsed) return StrCat({"bad index in '", name, "'"});
    index = static_cast<uint32_t>(*parsed);
    name = name.substr(0, open);
  }
  const FieldDesc* field = nullptr;
  for (const FieldDesc& f : desc.fields)
    if (f.name == name) field = &f;
  if (field == nullptr)
    for (const FieldDesc& f : desc.fields)
      if (EqualsIgnoreCase(f.name, name)) field = &f;
  if (field == nullptr) return StrCat({"no field '", name, "' in ", desc.name});
  if (!index && field->repeat > 1)
    return StrCat({"field '", field->name, "' has ", std::to_string(field->repeat),
                   " elements; name one as ", field->name, "[i]"});
  const uint32_t element = index.value_or(0);
  if (element >= field->repeat)
    return StrCat({"index ", std::to_string(element), " out of range for '", field->name, "' (",
                   std::to_string(field->repeat), " elements)"});
  const uint32_t offset = field->bit_offset + element * field->stride_bits;
  if (field->kind == FieldKind::kGid || field->kind == FieldKind::kBytes ||
      field->kind == FieldKind::kString) {
    std::vector<uint8_t> value;
    if (std::string error = ParseByteField(*field, text, value); !error.empty()) return error;
    std::copy(value.begin(), value.end(), bytes.begin() + offset / 8);
    return "";
  }
  uint64_t value = 0;
  if (std::string error = ParseScalar(*field, text, value); !error.empty()) return error;
  SetBits(bytes, offset, field->bit_width, value);
  return "";
}

}  // namespace softib::codec
