// DecodeFields, PrintFields and ValidateBytes on a hand-written layout.
#include "softib/codec/engine.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "test_layout.h"

namespace softib::codec {
namespace {

using test::kTestLayout;

// Bytes chosen by hand; the comments give each field's value.
std::vector<uint8_t> Sample() {
  return {
      0x12,              // A = 1, B = 2 (GREEN)
      0xAB, 0xCD,        // C = 0xABCD = 43981
      0x80,              // D = 1, R = 0
      0x01, 0x02,        // E[0] = 1, E[1] = 2
      0x00, 0x12, 0x34,  // W = 0x001234
      0x0F, 0xED,        // Q = 12 bits at bit 76: 0xFED
      0x00,              // unused
      0xFE, 0x80, 0,    0,    0,    0,    0,    0,
      0x00, 0x02, 0xC9, 0x03, 0x00, 0x00, 0x12, 0x34,  // G
      'a',  'b',  0,    0,                             // S = "ab"
      0xDE, 0xAD, 0xBE, 0xEF,                          // Y
      0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,  // L
  };
}

TEST(Engine, SampleHasLayoutSize) { EXPECT_EQ(Sample().size(), kTestLayout.size); }

TEST(Engine, DecodeFields) {
  const auto values = DecodeFields(kTestLayout, Sample());
  ASSERT_EQ(values.size(), 13u);  // 12 fields, E has two elements
  EXPECT_EQ(values[0].name, "A");
  EXPECT_EQ(values[0].value, 1u);
  EXPECT_EQ(values[1].value, 2u);
  EXPECT_EQ(values[2].value, 0xABCDu);
  EXPECT_EQ(values[3].value, 1u);
  EXPECT_EQ(values[4].name, "R");
  EXPECT_EQ(values[4].value, 0u);
  EXPECT_EQ(values[5].name, "E[0]");
  EXPECT_EQ(values[5].index, 0u);
  EXPECT_EQ(values[6].name, "E[1]");
  EXPECT_EQ(values[6].index, 1u);
  EXPECT_EQ(values[6].value, 2u);
  EXPECT_EQ(values[7].value, 0x1234u);
  EXPECT_EQ(values[8].value, 0xFEDu);
  EXPECT_EQ(values[9].bytes.size(), 16u);
  EXPECT_EQ(values[9].bytes[0], 0xFE);
  EXPECT_EQ(values[10].bytes, (std::vector<uint8_t>{'a', 'b', 0, 0}));
  EXPECT_EQ(values[11].bytes, (std::vector<uint8_t>{0xDE, 0xAD, 0xBE, 0xEF}));
  EXPECT_EQ(values[12].value, 0x0123456789ABCDEFull);
  EXPECT_EQ(values[12].desc, &kTestLayout.fields[11]);
}

TEST(Engine, DecodeShortBufferGivesNothing) {
  auto bytes = Sample();
  bytes.pop_back();
  EXPECT_TRUE(DecodeFields(kTestLayout, bytes).empty());
}

TEST(Engine, PrintFields) {
  std::ostringstream os;
  PrintFields(os, kTestLayout, Sample());
  EXPECT_EQ(os.str(),
            "A:..............................1\n"
            "B:..............................GREEN (2)\n"
            "C:..............................43981\n"
            "D:..............................1\n"
            "E[0]:...........................1\n"
            "E[1]:...........................2\n"
            "W:..............................0x001234\n"
            "Q:..............................4077\n"
            "G:..............................fe80:0000:0000:0000:0002:c903:0000:1234\n"
            "S:..............................ab\n"
            "Y:..............................deadbeef\n"
            "L:..............................0x0123456789abcdef\n");
}

TEST(Engine, PrintFieldsShowsNonZeroReservedAndIndents) {
  auto bytes = Sample();
  bytes[3] = 0x05;  // D = 0, R = 5
  std::ostringstream os;
  PrintFields(os, kTestLayout, bytes, 2);
  const std::string text = os.str();
  EXPECT_NE(text.find("  D:..............................0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  R:..............................5\n"), std::string::npos) << text;
}

TEST(Engine, FormatFieldValueEnumUnknown) {
  auto bytes = Sample();
  bytes[0] = 0x15;  // B = 5, not a Color
  const auto values = DecodeFields(kTestLayout, bytes);
  EXPECT_EQ(FormatFieldValue(values[1]), "5 (unknown)");
  FieldValue bare;
  bare.value = 42;
  EXPECT_EQ(FormatFieldValue(bare), "42");
}

TEST(Engine, FormatFieldValueStringEscapes) {
  auto bytes = Sample();
  bytes[28] = 0x01;
  bytes[29] = '\\';
  const auto values = DecodeFields(kTestLayout, bytes);
  EXPECT_EQ(FormatFieldValue(values[10]), "\\x01\\x5c");
}

TEST(Engine, ValidateClean) { EXPECT_TRUE(ValidateBytes(kTestLayout, Sample()).empty()); }

TEST(Engine, ValidateReservedAndEnum) {
  auto bytes = Sample();
  bytes[3] = 0x81;  // R = 1
  bytes[0] = 0x13;  // B = 3, not a Color
  const auto problems = ValidateBytes(kTestLayout, bytes);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].field, "B");
  EXPECT_EQ(problems[0].message, "3 is not a member of enum Color");
  EXPECT_EQ(problems[1].field, "R");
  EXPECT_EQ(problems[1].message, "reserved field is not zero (0x1)");
}

TEST(Engine, ValidateShortBuffer) {
  const std::vector<uint8_t> bytes(10);
  const auto problems = ValidateBytes(kTestLayout, bytes);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, "need 44 bytes, have 10");
}

TEST(Engine, CheckFits) {
  std::vector<Problem> problems;
  CheckFits(problems, "M", 0x7F, 7);
  CheckFits(problems, "M", ~0ull, 64);
  EXPECT_TRUE(problems.empty());
  CheckFits(problems, "M", 0x80, 7);
  CheckFits(problems, "V", 3, 0x20, 5);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].field, "M");
  EXPECT_EQ(problems[0].message, "value 0x80 does not fit in 7 bits");
  EXPECT_EQ(problems[1].field, "V[3]");
}

TEST(Engine, FindUnknownNames) {
  EXPECT_EQ(FindFormat("NoSuchLayoutAnywhere"), nullptr);
  EXPECT_EQ(FindAttribute(0xEE, 0xFFFF), nullptr);
}

}  // namespace
}  // namespace softib::codec
