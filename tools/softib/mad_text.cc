#include "mad_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <map>
#include <ostream>

#include "softib/codec/bits.h"
#include "softib/codec/engine.h"
#include "softib/wire/hex.h"

namespace softib::madtool {
namespace {

using codec::FieldDesc;
using codec::FieldKind;
using codec::FormatDesc;
using codec::FormatKind;

// Whole-MAD formats of the classes whose attributes do not start at byte 24,
// and the field that carries the attribute (idl/mad_common.idl).
struct ClassFormatName {
  uint8_t mgmt_class;
  std::string_view format;
  std::string_view data_field;
};
constexpr ClassFormatName kClassFormats[] = {
    {0x01, "SmpLid", "SMPData"},  {0x81, "SmpDr", "SMPData"}, {0x03, "SaHeader", "SAData"},
    {0x04, "PerfMgtMad", "Data"}, {0x05, "BmMad", "Data"},    {0x06, "DevMgtMad", "Data"},
    {0x07, "CmMad", "Data"},
};

constexpr int kValueColumn = 32;  // smpquery's column, as codec::PrintFields uses

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const FieldDesc* FieldNamed(const FormatDesc& desc, std::string_view name) {
  for (const FieldDesc& f : desc.fields)
    if (f.name == name) return &f;
  return nullptr;
}

const FieldDesc* FieldNamedIgnoreCase(const FormatDesc& desc, std::string_view name) {
  for (const FieldDesc& f : desc.fields)
    if (EqualsIgnoreCase(f.name, name)) return &f;
  return nullptr;
}

std::optional<uint64_t> ParseNumber(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string ClassName(uint8_t mgmt_class) {
  const codec::MadClassDesc* c = codec::FindMadClass(mgmt_class);
  return c == nullptr ? "class " + hex::Number(mgmt_class, 2)
                      : std::string(c->name) + " (" + hex::Number(mgmt_class, 2) + ")";
}

std::string MethodName(uint8_t mgmt_class, uint8_t method) {
  if (const codec::MadClassDesc* c = codec::FindMadClass(mgmt_class))
    for (const auto& m : c->methods)
      if (m.value == method) return std::string(m.name) + " (" + hex::Number(method, 2) + ")";
  return "method " + hex::Number(method, 2);
}

// One "Name:....value" line.
void PrintLine(std::ostream& os, int indent, std::string_view name, const std::string& value) {
  std::string line(static_cast<std::size_t>(indent), ' ');
  line += name;
  line += ':';
  const std::size_t column = static_cast<std::size_t>(indent + kValueColumn);
  if (line.size() < column) line.resize(column, '.');
  os << line << value << '\n';
}

// A class header, skipping the attribute area; long byte fields are shown up to
// their last non-zero byte.
void PrintClassHeader(std::ostream& os, const ClassLayout& layout, std::span<const uint8_t> mad,
                      int indent) {
  for (const codec::FieldValue& v : codec::DecodeFields(*layout.format, mad)) {
    const FieldDesc& f = *v.desc;
    if (&f == layout.data_field) continue;
    const bool zero = v.value == 0 &&
                      std::all_of(v.bytes.begin(), v.bytes.end(), [](uint8_t b) { return b == 0; });
    if (f.reserved && zero) continue;
    if (f.kind == FieldKind::kBytes && v.bytes.size() > 16) {
      std::size_t last = v.bytes.size();
      while (last > 1 && v.bytes[last - 1] == 0) --last;
      std::string text = hex::Format(std::span<const uint8_t>(v.bytes).first(last));
      if (last < v.bytes.size())
        text += " (then zeros to " + std::to_string(v.bytes.size()) + " bytes)";
      PrintLine(os, indent, v.name, text);
      continue;
    }
    // Codes read better in hex, as tshark shows them.
    static constexpr std::string_view kHexFields[] = {"MgmtClass", "Method", "Status",
                                                      "ClassSpecific", "AttributeID"};
    if (f.kind == FieldKind::kUInt &&
        std::find(std::begin(kHexFields), std::end(kHexFields), f.name) != std::end(kHexFields)) {
      PrintLine(os, indent, v.name, hex::Number(v.value, static_cast<int>((f.bit_width + 3) / 4)));
      continue;
    }
    PrintLine(os, indent, v.name, codec::FormatFieldValue(v));
  }
}

const char* KindName(FormatKind kind) {
  switch (kind) {
    case FormatKind::kFormat:
      return "format";
    case FormatKind::kHeader:
      return "header";
    case FormatKind::kAttribute:
      return "attribute";
  }
  return "layout";
}

// Resolves a method given as a name of the class or a number.
std::optional<uint8_t> ParseMethod(uint8_t mgmt_class, std::string_view text) {
  if (const codec::MadClassDesc* c = codec::FindMadClass(mgmt_class))
    for (const auto& m : c->methods)
      if (EqualsIgnoreCase(m.name, text)) return static_cast<uint8_t>(m.value);
  const auto n = ParseNumber(text);
  if (!n || *n > 0xFF) return std::nullopt;
  return static_cast<uint8_t>(*n);
}

std::string SetOrExplain(const FormatDesc& desc, std::span<uint8_t> bytes, std::string_view field,
                         std::string_view value) {
  const std::string error = codec::SetField(desc, bytes, field, value);
  if (error.empty() || error.rfind("no field", 0) == 0) return error;
  return std::string(desc.name) + "." + std::string(field) + ": " + error;
}

}  // namespace

ClassLayout LayoutOfClass(uint8_t mgmt_class) {
  ClassLayout layout;
  for (const auto& c : kClassFormats) {
    if (c.mgmt_class != mgmt_class) continue;
    const FormatDesc* desc = codec::FindFormat(c.format);
    const FieldDesc* data = desc == nullptr ? nullptr : FieldNamed(*desc, c.data_field);
    if (data == nullptr) break;
    layout.format = desc;
    layout.data_field = data;
    layout.data_offset = data->bit_offset / 8;
    layout.data_size = data->bit_width / 8;
  }
  if (layout.format == nullptr) {
    layout.format = codec::FindFormat("MadHeader");
    // BM MADs carry B_Key and 32 reserved bytes before the data (IBA 16.2.1).
    if (mgmt_class == 0x05) layout.data_offset = 64;
    layout.data_size = kMadSize - layout.data_offset;
  }
  return layout;
}

uint8_t DefaultClassOf(const FormatDesc& attribute) {
  return attribute.mgmt_classes.empty() ? 0 : attribute.mgmt_classes.front();
}

void PrintLayout(std::ostream& os, const FormatDesc& desc, std::span<const uint8_t> bytes,
                 int indent) {
  codec::PrintFields(os, desc, bytes, indent);
}

const FormatDesc* FindLayout(std::string_view name, Errors* errors) {
  const FormatDesc* desc = codec::FindFormat(name);
  if (desc == nullptr)
    errors->push_back("unknown layout '" + std::string(name) + "' (softib mad list shows them)");
  return desc;
}

std::optional<uint8_t> ParseClass(std::string_view text) {
  for (const codec::MadClassDesc* c : codec::AllMadClasses())
    if (EqualsIgnoreCase(c->name, text)) return c->mgmt_class;
  const auto n = ParseNumber(text);
  if (!n || *n > 0xFF) return std::nullopt;
  return static_cast<uint8_t>(*n);
}

void DecodeAs(std::ostream& os, const FormatDesc& desc, std::span<const uint8_t> bytes,
              Errors* errors) {
  if (bytes.size() < desc.size) {
    errors->push_back("too short: " + std::string(desc.name) + " needs " +
                      std::to_string(desc.size) + " bytes, got " + std::to_string(bytes.size()));
    return;
  }
  os << "-- " << desc.name << " (" << KindName(desc.kind) << ", " << desc.size << " bytes) --\n";
  PrintLayout(os, desc, bytes, 0);
  if (bytes.size() > desc.size)
    os << "(" << bytes.size() - desc.size << " bytes after " << desc.name << " not decoded)\n";
}

void DecodeMad(std::ostream& os, std::span<const uint8_t> mad, int indent, Errors* errors) {
  if (mad.size() < kMadSize) {
    errors->push_back("too short: a MAD is " + std::to_string(kMadSize) + " bytes, got " +
                      std::to_string(mad.size()));
    return;
  }
  if (mad.size() > kMadSize) {
    errors->push_back("a MAD is " + std::to_string(kMadSize) + " bytes, got " +
                      std::to_string(mad.size()) + " (use --packet for a whole packet)");
    return;
  }
  const uint8_t mgmt_class = mad[1];
  const uint8_t method = mad[3];
  const uint16_t attribute_id = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
  const ClassLayout layout = LayoutOfClass(mgmt_class);
  const FormatDesc* attribute = codec::FindAttribute(mgmt_class, attribute_id);
  const std::string pad(static_cast<std::size_t>(indent), ' ');

  os << pad << "MAD " << ClassName(mgmt_class) << ", " << MethodName(mgmt_class, method)
     << ", attribute "
     << (attribute != nullptr
             ? std::string(attribute->name) + " (" + hex::Number(attribute_id, 4) + ")"
             : hex::Number(attribute_id, 4))
     << "\n";
  if (layout.format != nullptr) {
    os << pad << "-- " << layout.format->name << " --\n";
    PrintClassHeader(os, layout, mad, indent);
  }
  if (attribute == nullptr) {
    errors->push_back("unknown attribute id " + hex::Number(attribute_id, 4) + " for class " +
                      ClassName(mgmt_class));
    return;
  }
  const auto data = mad.subspan(layout.data_offset);
  if (data.size() < attribute->size) {
    errors->push_back(std::string(attribute->name) + " (" + std::to_string(attribute->size) +
                      " bytes) does not fit in the " + std::to_string(data.size()) +
                      "-byte data area of " + ClassName(mgmt_class));
    return;
  }
  os << pad << "-- " << attribute->name << " (" << hex::Number(attribute_id, 4) << ") --\n";
  PrintLayout(os, *attribute, data, indent);
  for (const codec::Problem& p : codec::ValidateBytes(*attribute, data)) {
    // A zero enum field is "not set" in most requests; only real oddities are worth a line.
    if (p.message.rfind("0 is not a member", 0) == 0) continue;
    os << pad << "warning: " << attribute->name << "." << p.field << ": " << p.message << "\n";
  }
}

std::optional<std::vector<uint8_t>> Encode(const EncodeRequest& request, Errors* errors) {
  const FormatDesc* desc = FindLayout(request.layout, errors);
  if (desc == nullptr) return std::nullopt;
  const bool whole_mad = desc->kind == FormatKind::kAttribute;
  if (!whole_mad && (request.mgmt_class || request.method || request.attribute_modifier ||
                     request.transaction_id)) {
    errors->push_back("--class/--method/--attr-mod/--tid need an attribute layout; " +
                      std::string(desc->name) + " is a " + KindName(desc->kind));
    return std::nullopt;
  }
  if (!whole_mad) {
    std::vector<uint8_t> bytes(desc->size, 0);
    for (const std::string& a : request.assignments) {
      const auto eq = a.find('=');
      if (eq == std::string::npos || eq == 0) {
        errors->push_back("expected Field=value, got '" + a + "'");
        continue;
      }
      if (std::string e = SetOrExplain(*desc, bytes, a.substr(0, eq), a.substr(eq + 1)); !e.empty())
        errors->push_back(e);
    }
    if (!errors->empty()) return std::nullopt;
    return bytes;
  }

  uint8_t mgmt_class = DefaultClassOf(*desc);
  if (request.mgmt_class) {
    const auto c = ParseClass(*request.mgmt_class);
    if (!c) {
      errors->push_back("unknown management class '" + *request.mgmt_class + "'");
      return std::nullopt;
    }
    if (std::find(desc->mgmt_classes.begin(), desc->mgmt_classes.end(), *c) ==
        desc->mgmt_classes.end()) {
      errors->push_back(std::string(desc->name) + " is not an attribute of " + ClassName(*c));
      return std::nullopt;
    }
    mgmt_class = *c;
  }
  const ClassLayout layout = LayoutOfClass(mgmt_class);
  const codec::MadClassDesc* cls = codec::FindMadClass(mgmt_class);
  std::vector<uint8_t> mad(kMadSize, 0);
  const FormatDesc& header = *layout.format;
  const auto set_header = [&](std::string_view field, const std::string& value) {
    if (std::string e = SetOrExplain(header, mad, field, value); !e.empty()) errors->push_back(e);
  };
  set_header("BaseVersion", "1");
  set_header("MgmtClass", std::to_string(mgmt_class));
  set_header("ClassVersion", std::to_string(cls != nullptr ? cls->class_version : 1));
  // CM messages travel as Send; everything else defaults to Get.
  uint8_t method = mgmt_class == 0x07 && desc->attribute_id != 0x0001 ? 0x03 : 0x01;
  if (request.method) {
    const auto m = ParseMethod(mgmt_class, *request.method);
    if (!m) {
      errors->push_back("unknown method '" + *request.method + "' for " + ClassName(mgmt_class));
      return std::nullopt;
    }
    method = *m;
  }
  mad[3] = method;
  set_header("AttributeID", std::to_string(desc->attribute_id));
  if (request.attribute_modifier) set_header("AttributeModifier", *request.attribute_modifier);
  if (request.transaction_id) set_header("TransactionID", *request.transaction_id);
  if (!errors->empty()) return std::nullopt;

  std::span<uint8_t> data(mad.data() + layout.data_offset, mad.size() - layout.data_offset);
  if (data.size() < desc->size) {
    errors->push_back(std::string(desc->name) + " does not fit in a " + ClassName(mgmt_class) +
                      " MAD");
    return std::nullopt;
  }
  for (const std::string& a : request.assignments) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      errors->push_back("expected Field=value, got '" + a + "'");
      continue;
    }
    std::string field = a.substr(0, eq);
    const std::string value = a.substr(eq + 1);
    // "mad.Field" names a field of the class header (M_Key, ComponentMask...).
    if (field.rfind("mad.", 0) == 0) {
      set_header(field.substr(4), value);
      continue;
    }
    std::string e = SetOrExplain(*desc, data, field, value);
    if (e.rfind("no field", 0) == 0) {
      // Not an attribute field: a class header field may carry that name.
      if (FieldNamedIgnoreCase(header, field) != nullptr) {
        set_header(field, value);
        continue;
      }
      e = "no field '" + field + "' in " + std::string(desc->name) + " or the " +
          std::string(header.name) + " header";
    }
    if (!e.empty()) errors->push_back(e);
  }
  if (!errors->empty()) return std::nullopt;
  return mad;
}

void ListLayouts(std::ostream& os) {
  os << "Management classes:\n";
  for (const codec::MadClassDesc* c : codec::AllMadClasses()) {
    os << "  " << hex::Number(c->mgmt_class, 2) << "  " << c->name << " (version "
       << static_cast<int>(c->class_version) << "):";
    for (const auto& m : c->methods) os << " " << m.name << "=" << hex::Number(m.value, 2);
    os << "\n";
  }
  std::map<std::string, const FormatDesc*> sorted[3];
  for (const FormatDesc* d : codec::AllFormats())
    sorted[static_cast<int>(d->kind)][std::string(d->name)] = d;
  os << "Attributes (id, name, size, classes):\n";
  std::vector<const FormatDesc*> attrs;
  for (const auto& [name, d] : sorted[static_cast<int>(FormatKind::kAttribute)]) attrs.push_back(d);
  std::stable_sort(attrs.begin(), attrs.end(), [](const FormatDesc* a, const FormatDesc* b) {
    return a->attribute_id < b->attribute_id;
  });
  for (const FormatDesc* d : attrs) {
    os << "  " << hex::Number(d->attribute_id, 4) << "  " << d->name << " (" << d->size
       << " bytes):";
    for (uint8_t c : d->mgmt_classes) {
      const codec::MadClassDesc* cls = codec::FindMadClass(c);
      os << " " << (cls != nullptr ? std::string(cls->name) : hex::Number(c, 2));
    }
    os << "\n";
  }
  os << "Formats:\n";
  for (const auto& [name, d] : sorted[static_cast<int>(FormatKind::kFormat)])
    os << "  " << name << " (" << d->size << " bytes)\n";
  os << "Wire headers:\n";
  for (const auto& [name, d] : sorted[static_cast<int>(FormatKind::kHeader)])
    os << "  " << name << " (" << d->size << " bytes)\n";
  if (!codec::AllOpcodes().empty()) {
    os << "BTH opcodes:\n";
    for (const codec::OpcodeDesc& o : codec::AllOpcodes()) {
      if (o.name.empty()) continue;
      os << "  " << hex::Number(o.opcode, 2) << "  " << o.name << ":";
      for (std::string_view h : o.headers) os << " " << h;
      if (o.payload) os << " payload";
      os << "\n";
    }
  }
}

}  // namespace softib::madtool
