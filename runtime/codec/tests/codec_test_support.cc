// Checks shared by the generated MAD/header round-trip tests.
#include "codec_test_support.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "softib/codec/bits.h"

namespace softib::codec::testing {
namespace {

std::string Label(std::string_view name, int index) {
  std::string label(name);
  if (index >= 0) {
    label += '[';
    label += std::to_string(index);
    label += ']';
  }
  return label;
}

bool IsByteKind(FieldKind kind) {
  return kind == FieldKind::kGid || kind == FieldKind::kBytes || kind == FieldKind::kString;
}

std::string HexBytes(std::span<const uint8_t> bytes) {
  std::string out;
  char pair[4];
  for (uint8_t b : bytes) {
    std::snprintf(pair, sizeof pair, "%02x", b);
    out += pair;
  }
  return out;
}

bool Bit(std::span<const uint8_t> bytes, uint32_t bit) {
  return (bytes[bit / 8] >> (7 - bit % 8)) & 1;
}

// Enum values print as "NAME (n)" or "n (unknown)"; SetField takes the name or the number.
std::string Parseable(const FieldValue& v, const std::string& text) {
  if (v.desc->kind != FieldKind::kEnum) return text;
  return text.substr(0, text.find(" ("));
}

// Makes every string field element a printable prefix then NULs, the only
// strings whose printed text is the whole content.
void MakeStringsPrintable(const FormatDesc& desc, std::span<uint8_t> bytes, std::mt19937_64& rng) {
  for (const FieldDesc& f : desc.fields) {
    if (f.kind != FieldKind::kString) continue;
    for (uint32_t i = 0; i < f.repeat; ++i) {
      const uint32_t size = f.bit_width / 8;
      const uint32_t length = static_cast<uint32_t>(rng() % (size + 1));
      uint8_t* text = bytes.data() + (f.bit_offset + i * f.stride_bits) / 8;
      for (uint32_t k = 0; k < size; ++k) {
        uint8_t c = static_cast<uint8_t>(0x20 + rng() % 0x5f);
        if (c == '\\') c = '/';
        text[k] = k < length ? c : 0;
      }
    }
  }
}

}  // namespace

uint64_t Seed(std::string_view layout) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : layout) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return hash;
}

void FillRandom(std::mt19937_64& rng, std::span<uint8_t> bytes) {
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
}

bool ExpectElement(const std::vector<FieldValue>& values, std::size_t k, std::string_view name,
                   int index, uint64_t expected) {
  const std::string label = Label(name, index);
  if (k >= values.size()) {
    ADD_FAILURE() << label << ": DecodeFields returned only " << values.size() << " values";
    return false;
  }
  if (values[k].name != label || values[k].value != expected) {
    ADD_FAILURE() << "DecodeFields value " << k << " is " << values[k].name << " = 0x" << std::hex
                  << values[k].value << ", the struct has " << label << " = 0x" << expected;
    return false;
  }
  return true;
}

bool ExpectElementBytes(const std::vector<FieldValue>& values, std::size_t k, std::string_view name,
                        int index, std::span<const uint8_t> expected) {
  const std::string label = Label(name, index);
  if (k >= values.size()) {
    ADD_FAILURE() << label << ": DecodeFields returned only " << values.size() << " values";
    return false;
  }
  const auto& got = values[k].bytes;
  if (values[k].name != label ||
      !std::equal(got.begin(), got.end(), expected.begin(), expected.end())) {
    ADD_FAILURE() << "DecodeFields value " << k << " is " << values[k].name << " = "
                  << HexBytes(got) << ", the struct has " << label << " = " << HexBytes(expected);
    return false;
  }
  return true;
}

bool ExpectGetter(uint64_t got, std::span<const uint8_t> bytes, uint32_t offset, uint32_t width,
                  std::string_view name, int index) {
  const uint64_t expected = GetBits(bytes, offset, width);
  if (got == expected) return true;
  ADD_FAILURE() << "view getter " << Label(name, index) << " returned 0x" << std::hex << got
                << ", the bits at offset " << std::dec << offset << " hold 0x" << std::hex
                << expected;
  return false;
}

bool ExpectBytesAt(std::span<const uint8_t> got, std::span<const uint8_t> bytes, uint32_t offset,
                   std::string_view name, int index) {
  const auto expected = bytes.subspan(offset / 8, got.size());
  if (std::equal(got.begin(), got.end(), expected.begin())) return true;
  ADD_FAILURE() << "view " << Label(name, index) << " shows " << HexBytes(got)
                << ", the bytes at offset " << offset << " are " << HexBytes(expected);
  return false;
}

bool ExpectFlipped(std::span<const uint8_t> before, std::span<const uint8_t> after, uint32_t offset,
                   uint32_t width, std::string_view name, int index) {
  for (uint32_t bit = 0; bit < before.size() * 8; ++bit) {
    const bool inside = bit >= offset && bit < offset + width;
    if ((Bit(before, bit) != Bit(after, bit)) != inside) {
      ADD_FAILURE() << "setting " << Label(name, index) << " (bits " << offset << ".."
                    << offset + width - 1 << ") " << (inside ? "did not change" : "changed")
                    << " bit " << bit << " (byte " << bit / 8 << "[" << 7 - bit % 8 << "])";
      return false;
    }
  }
  return true;
}

bool Check(bool ok, std::string_view layout, std::string_view what, int iteration) {
  if (!ok) {
    if (iteration >= 0) {
      ADD_FAILURE() << layout << ": " << what << " (iteration " << iteration << ")";
    } else {
      ADD_FAILURE() << layout << ": " << what;
    }
  }
  return ok;
}

bool ExpectNoProblems(const std::vector<Problem>& problems, std::string_view layout) {
  if (problems.empty()) return true;
  ADD_FAILURE() << layout << ": Validate() reported problems in a valid value:\n"
                << Describe(problems);
  return false;
}

bool ExpectProblem(const std::vector<Problem>& problems, std::string_view layout,
                   std::string_view field, std::string_view why) {
  if (HasProblem(problems, field)) return true;
  ADD_FAILURE() << layout << ": Validate() did not report " << field << " (" << why
                << "); it reported:\n"
                << Describe(problems);
  return false;
}

bool HasProblem(const std::vector<Problem>& problems, std::string_view field) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const Problem& p) { return p.field == field; });
}

std::string Describe(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems) {
    out += p.field;
    out += ": ";
    out += p.message;
    out += '\n';
  }
  return out;
}

std::vector<uint8_t> CoveredMask(const FormatDesc& desc) {
  std::vector<uint8_t> mask(desc.size, 0);
  for (const FieldDesc& f : desc.fields)
    for (uint32_t i = 0; i < f.repeat; ++i)
      for (uint32_t b = 0; b < f.bit_width; ++b)
        SetBits(mask, f.bit_offset + i * f.stride_bits + b, 1, 1);
  return mask;
}

bool ExpectRepacked(const FormatDesc& desc, std::span<const uint8_t> raw,
                    std::span<const uint8_t> packed) {
  const std::vector<uint8_t> mask = CoveredMask(desc);
  for (std::size_t i = 0; i < desc.size; ++i) {
    if (packed[i] != (raw[i] & mask[i])) {
      ADD_FAILURE() << desc.name << ": Unpack then Pack changed byte " << i << ": 0x" << std::hex
                    << int(raw[i]) << " (covered bits 0x" << int(mask[i]) << ") became 0x"
                    << int(packed[i]);
      return false;
    }
  }
  return true;
}

void CheckDescriptor(const FormatDesc& desc, std::string_view name, std::size_t size) {
  EXPECT_EQ(desc.name, name);
  EXPECT_EQ(desc.size, size);
  EXPECT_EQ(FindFormat(name), &desc) << name;
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(FindFormat(upper), &desc) << upper;
  if (desc.kind == FormatKind::kAttribute) {
    EXPECT_FALSE(desc.mgmt_classes.empty()) << name;
    for (uint8_t mgmt_class : desc.mgmt_classes) {
      EXPECT_EQ(FindAttribute(mgmt_class, desc.attribute_id), &desc)
          << name << " in class 0x" << std::hex << int(mgmt_class);
      EXPECT_NE(FindMadClass(mgmt_class), nullptr)
          << name << ": class 0x" << std::hex << int(mgmt_class) << " not registered";
    }
  }
  // An independent check of the layout stage: elements inside, no overlaps.
  std::vector<std::string> owner(desc.size * 8);
  for (const FieldDesc& f : desc.fields) {
    EXPECT_GE(f.repeat, 1u) << f.name;
    EXPECT_TRUE(f.bit_width >= 1 && (IsByteKind(f.kind) || f.bit_width <= 64)) << f.name;
    if (IsByteKind(f.kind)) {
      EXPECT_EQ(f.bit_width % 8, 0u) << f.name;
      EXPECT_EQ(f.bit_offset % 8, 0u) << f.name;
    }
    EXPECT_EQ(f.kind == FieldKind::kEnum, f.enum_desc != nullptr) << f.name;
    for (uint32_t i = 0; i < f.repeat; ++i) {
      const uint32_t offset = f.bit_offset + i * f.stride_bits;
      ASSERT_LE(offset + f.bit_width, desc.size * 8)
          << Label(f.name, int(i)) << " runs past " << desc.name;
      for (uint32_t b = offset; b < offset + f.bit_width; ++b) {
        ASSERT_TRUE(owner[b].empty())
            << Label(f.name, int(i)) << " overlaps " << owner[b] << " at bit " << b;
        owner[b] = Label(f.name, int(i));
      }
    }
  }
}

void CheckTextRoundTrip(const FormatDesc& desc, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < kIterations / 10; ++iter) {
    std::vector<uint8_t> bytes(desc.size);
    FillRandom(rng, bytes);
    MakeStringsPrintable(desc, bytes, rng);
    const std::vector<FieldValue> values = DecodeFields(desc, bytes);
    std::vector<uint8_t> rebuilt(desc.size, 0);
    std::size_t shown = 0;
    for (const FieldValue& v : values) {
      const std::string text = FormatFieldValue(v);
      const std::string error = SetField(desc, rebuilt, v.name, Parseable(v, text));
      ASSERT_EQ(error, "") << desc.name << "." << v.name << " = '" << text << "'";
      const bool zero = v.value == 0 && std::all_of(v.bytes.begin(), v.bytes.end(),
                                                    [](uint8_t b) { return b == 0; });
      if (!v.desc->reserved || !zero) ++shown;
    }
    const std::vector<FieldValue> again = DecodeFields(desc, rebuilt);
    ASSERT_EQ(again.size(), values.size());
    for (std::size_t k = 0; k < values.size(); ++k) {
      ASSERT_EQ(again[k].value, values[k].value) << desc.name << "." << values[k].name;
      ASSERT_EQ(again[k].bytes, values[k].bytes) << desc.name << "." << values[k].name;
    }
    std::ostringstream printed;
    PrintFields(printed, desc, bytes);
    std::istringstream lines(printed.str());
    std::size_t count = 0;
    for (std::string line; std::getline(lines, line); ++count) {
      const std::size_t colon = line.find(':');
      ASSERT_NE(colon, std::string::npos) << line;
      if (colon < 31) {  // dots from the colon up to the value column
        ASSERT_GE(line.size(), 32u) << line;
        ASSERT_EQ(line.substr(colon + 1, 31 - colon), std::string(31 - colon, '.')) << line;
      }
    }
    ASSERT_EQ(count, shown) << printed.str();
  }
}

void CheckShortBuffers(const FormatDesc& desc) {
  std::vector<uint8_t> bytes(desc.size - 1, 0);
  EXPECT_TRUE(DecodeFields(desc, bytes).empty()) << desc.name;
  EXPECT_FALSE(ValidateBytes(desc, bytes).empty()) << desc.name;
  if (!desc.fields.empty()) {
    const std::string name = desc.fields[0].repeat > 1 ? std::string(desc.fields[0].name) + "[0]"
                                                       : std::string(desc.fields[0].name);
    EXPECT_NE(SetField(desc, bytes, name, "0"), "") << desc.name;
  }
}

}  // namespace softib::codec::testing
