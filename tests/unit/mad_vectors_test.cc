// The generated MAD/header codecs against tests/data/mad_vectors.txt: byte
// vectors written by hand from the IBTA tables, independent of idl/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mad_vector_file.h"
#include "softib/codec/engine.h"
#include "softib/codec/format_desc.h"

#ifndef SOFTIB_MAD_VECTORS_FILE
#error "SOFTIB_MAD_VECTORS_FILE must name tests/data/mad_vectors.txt"
#endif

namespace softib {
namespace {

using codec::FieldKind;
using codec::FieldValue;
using testing::MadVector;

const std::vector<MadVector>& AllVectors() {
  static const std::vector<MadVector> vectors = [] {
    std::vector<MadVector> v;
    std::string error;
    if (!testing::ReadMadVectors(SOFTIB_MAD_VECTORS_FILE, &v, &error)) {
      ADD_FAILURE() << error;
      v.clear();
    }
    return v;
  }();
  return vectors;
}

bool IsByteKind(FieldKind kind) {
  return kind == FieldKind::kGid || kind == FieldKind::kBytes || kind == FieldKind::kString;
}

std::optional<uint64_t> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const uint64_t v = std::strtoull(text.c_str(), &end, 0);
  if (*end != '\0') return std::nullopt;
  return v;
}

// The expected bytes of a gid/bytes/string field: quoted text or hex, zero-padded.
std::optional<std::vector<uint8_t>> ExpectedBytes(const std::string& text, std::size_t width) {
  std::vector<uint8_t> out;
  std::string unquoted;
  if (testing::Unquote(text, &unquoted)) {
    out.assign(unquoted.begin(), unquoted.end());
  } else {
    if (text.size() % 2 != 0) return std::nullopt;
    for (std::size_t i = 0; i < text.size(); i += 2) {
      const auto byte = ParseNumber("0x" + text.substr(i, 2));
      if (!byte) return std::nullopt;
      out.push_back(static_cast<uint8_t>(*byte));
    }
  }
  if (out.size() > width) return std::nullopt;
  out.resize(width, 0);
  return out;
}

std::string FieldNames(const std::vector<FieldValue>& values) {
  std::string names;
  for (const auto& v : values) {
    if (v.index == 0) names += " " + std::string(v.desc->name);
  }
  return names;
}

class MadVectorTest : public ::testing::TestWithParam<MadVector> {};

TEST_P(MadVectorTest, DecodesAndReencodes) {
  const MadVector& vec = GetParam();
  SCOPED_TRACE("vector " + vec.name + " (mad_vectors.txt:" + std::to_string(vec.line) + ")");
  const codec::FormatDesc* desc = codec::FindFormat(vec.layout);
  ASSERT_NE(desc, nullptr) << "no layout named " << vec.layout;
  EXPECT_EQ(desc->name, vec.layout) << "layout name differs in case";
  if (vec.size) {
    EXPECT_EQ(desc->size, *vec.size) << "layout size differs from the specification";
  }
  ASSERT_LE(vec.bytes.size(), desc->size) << "vector longer than the layout";
  std::vector<uint8_t> bytes = vec.bytes;
  bytes.resize(desc->size, 0);

  const std::vector<FieldValue> values = codec::DecodeFields(*desc, bytes);
  std::map<std::string, const FieldValue*> by_name;
  for (const auto& v : values) by_name[v.name] = &v;

  std::map<std::string, bool> listed;
  for (const auto& [name, text] : vec.expect) {
    listed[name] = true;
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      ADD_FAILURE() << "no field " << name << " in " << vec.layout << "; it has:"
                    << FieldNames(values);
      continue;
    }
    const FieldValue& v = *it->second;
    if (IsByteKind(v.desc->kind)) {
      const auto want = ExpectedBytes(text, v.desc->bit_width / 8);
      ASSERT_TRUE(want.has_value()) << "bad bytes value for " << name << ": " << text;
      EXPECT_EQ(v.bytes, *want) << name;
    } else {
      const auto want = ParseNumber(text);
      ASSERT_TRUE(want.has_value()) << "bad number for " << name << ": " << text;
      EXPECT_EQ(v.value, *want) << name << " decodes as 0x" << std::hex << v.value
                                << ", the specification puts 0x" << *want;
    }
  }
  if (!vec.complete) return;

  // Every field the vector leaves out must be zero: a field the IDL placed on
  // top of bits this vector sets would show up here.
  for (const auto& v : values) {
    if (listed.count(v.name)) continue;
    const bool zero =
        v.value == 0 && std::all_of(v.bytes.begin(), v.bytes.end(), [](uint8_t b) { return b == 0; });
    EXPECT_TRUE(zero) << v.name << " (not in the vector) decodes as non-zero: "
                      << codec::FormatFieldValue(v);
  }

  // Re-encode from the expected values alone onto zeroed bytes.
  std::vector<uint8_t> rebuilt(desc->size, 0);
  for (const auto& [name, text] : vec.expect) {
    std::string value = text;
    std::string unquoted;
    if (testing::Unquote(text, &unquoted)) value = unquoted;
    const std::string error = codec::SetField(*desc, rebuilt, name, value);
    EXPECT_EQ(error, "") << "SetField(" << name << ", " << text << ")";
  }
  for (std::size_t i = 0; i < bytes.size(); ++i)
    EXPECT_EQ(rebuilt[i], bytes[i]) << "byte " << i << " after SetField from the expect list";
}

std::string VectorName(const ::testing::TestParamInfo<MadVector>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Spec, MadVectorTest, ::testing::ValuesIn(AllVectors()), VectorName);

TEST(MadVectorFile, CoversTheRequiredLayouts) {
  std::map<std::string, int> count;
  for (const auto& v : AllVectors()) ++count[v.layout];
  for (const char* layout :
       {"MadHeader", "RmppHeader", "NodeInfo", "PortInfo", "SwitchInfo", "LinearForwardingTable",
        "PathRecord", "MCMemberRecord", "ServiceRecord", "PortCounters", "LRH", "BTH", "DETH",
        "RETH", "AETH", "AtomicETH"})
    EXPECT_GE(count[layout], 1) << layout;
  EXPECT_GE(count["PortInfo"], 3) << "PortInfo's sub-byte fields need several vectors";
}

TEST(MadVectorFile, NamesAreUnique) {
  std::map<std::string, int> seen;
  for (const auto& v : AllVectors()) EXPECT_EQ(++seen[v.name], 1) << v.name;
}

}  // namespace
}  // namespace softib
