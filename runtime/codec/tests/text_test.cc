// SetField: names, numbers, enum members, GIDs, bytes and strings from text.
#include <gtest/gtest.h>

#include <vector>

#include "softib/codec/bits.h"
#include "softib/codec/engine.h"
#include "test_layout.h"

namespace softib::codec {
namespace {

using test::kTestLayout;

class SetFieldTest : public ::testing::Test {
 protected:
  std::string Set(std::string_view name, std::string_view text) {
    return SetField(kTestLayout, bytes_, name, text);
  }
  std::vector<uint8_t> Slice(std::size_t first, std::size_t count) const {
    return {bytes_.begin() + static_cast<std::ptrdiff_t>(first),
            bytes_.begin() + static_cast<std::ptrdiff_t>(first + count)};
  }
  std::vector<uint8_t> bytes_ = std::vector<uint8_t>(kTestLayout.size, 0);
};

TEST_F(SetFieldTest, Numbers) {
  EXPECT_EQ(Set("C", "0x1234"), "");
  EXPECT_EQ(Slice(1, 2), (std::vector<uint8_t>{0x12, 0x34}));
  EXPECT_EQ(Set("C", "258"), "");
  EXPECT_EQ(Slice(1, 2), (std::vector<uint8_t>{0x01, 0x02}));
  EXPECT_EQ(Set("A", "0b1010"), "");
  EXPECT_EQ(bytes_[0], 0xA0);
  EXPECT_EQ(Set("L", "0xFFFFFFFFFFFFFFFF"), "");
  EXPECT_EQ(GetBits(bytes_, 288, 64), ~0ull);
  EXPECT_EQ(Set("Q", " 0xfed "), "");
  EXPECT_EQ(Slice(9, 2), (std::vector<uint8_t>{0x0F, 0xED}));
}

TEST_F(SetFieldTest, KeepsNeighbours) {
  bytes_.assign(kTestLayout.size, 0xFF);
  EXPECT_EQ(Set("B", "0"), "");
  EXPECT_EQ(bytes_[0], 0xF0);
  EXPECT_EQ(Set("D", "false"), "");
  EXPECT_EQ(bytes_[3], 0x7F);
}

TEST_F(SetFieldTest, NumberErrors) {
  EXPECT_EQ(Set("A", "16"), "value 16 does not fit in 4 bits");
  EXPECT_EQ(Set("C", "12z"), "'12z' is not a number");
  EXPECT_EQ(Set("C", ""), "'' is not a number");
  EXPECT_EQ(Set("L", "0x10000000000000000"), "'0x10000000000000000' is not a number");
  EXPECT_EQ(Set("C", "-1"), "'-1' is not a number");
}

TEST_F(SetFieldTest, EnumByNameOrNumber) {
  EXPECT_EQ(Set("B", "blue"), "");
  EXPECT_EQ(bytes_[0], 0x07);
  EXPECT_EQ(Set("B", "GREEN"), "");
  EXPECT_EQ(bytes_[0], 0x02);
  EXPECT_EQ(Set("B", "5"), "");  // not a member, but encoding it is allowed (validation reports it)
  EXPECT_EQ(bytes_[0], 0x05);
  EXPECT_EQ(Set("B", "PURPLE"), "'PURPLE' is not a number or a member of enum Color");
}

TEST_F(SetFieldTest, Bool) {
  EXPECT_EQ(Set("d", "TRUE"), "");  // field names are case-insensitive
  EXPECT_EQ(bytes_[3], 0x80);
  EXPECT_EQ(Set("D", "2"), "value 2 does not fit in 1 bits");
}

TEST_F(SetFieldTest, Elements) {
  EXPECT_EQ(Set("E[1]", "7"), "");
  EXPECT_EQ(Slice(4, 2), (std::vector<uint8_t>{0x00, 0x07}));
  EXPECT_EQ(Set("E", "7"), "field 'E' has 2 elements; name one as E[i]");
  EXPECT_EQ(Set("E[2]", "7"), "index 2 out of range for 'E' (2 elements)");
  EXPECT_EQ(Set("E[x]", "7"), "bad index in 'E[x]'");
  EXPECT_EQ(Set("C[1]", "7"), "index 1 out of range for 'C' (1 elements)");
  EXPECT_EQ(Set("C[0]", "7"), "");
  EXPECT_EQ(Set("Nope", "1"), "no field 'Nope' in TestLayout");
}

TEST_F(SetFieldTest, Gid) {
  EXPECT_EQ(Set("G", "fe80::2:c903:0:1234"), "");
  EXPECT_EQ(Slice(12, 16), (std::vector<uint8_t>{0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xC9,
                                                 0x03, 0x00, 0x00, 0x12, 0x34}));
  EXPECT_EQ(Set("G", "::ffff:192.168.0.1"), "");
  EXPECT_EQ(Slice(12, 16),
            (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 168, 0, 1}));
  EXPECT_EQ(Set("G", "1:2:3:4:5:6:7:8"), "");
  EXPECT_EQ(Slice(12, 4), (std::vector<uint8_t>{0, 1, 0, 2}));
  EXPECT_EQ(Set("G", "::"), "");
  EXPECT_EQ(Slice(12, 16), std::vector<uint8_t>(16, 0));
  EXPECT_EQ(Set("G", "fe80000000000000000000000000abcd"), "");  // plain hex works too
  EXPECT_EQ(Slice(26, 2), (std::vector<uint8_t>{0xAB, 0xCD}));
}

TEST_F(SetFieldTest, GidErrors) {
  for (const char* bad : {"1::2::3", "12345::", "g::", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9",
                          "::1.2.3", "::1.2.3.256", "1:2:3:4:5:6:7::8"}) {
    EXPECT_EQ(Set("G", bad), std::string("'") + bad + "' is not a GID") << bad;
  }
}

TEST_F(SetFieldTest, BytesAndStrings) {
  EXPECT_EQ(Set("Y", "de:ad:be:ef"), "");
  EXPECT_EQ(Slice(32, 4), (std::vector<uint8_t>{0xDE, 0xAD, 0xBE, 0xEF}));
  EXPECT_EQ(Set("Y", "0x0102"), "");  // shorter input is zero-filled
  EXPECT_EQ(Slice(32, 4), (std::vector<uint8_t>{0x01, 0x02, 0x00, 0x00}));
  EXPECT_EQ(Set("Y", "0102030405"), "5 bytes do not fit in 4");
  EXPECT_EQ(Set("Y", "012"), "'012' is not hex bytes");
  EXPECT_EQ(Set("S", "abc"), "");
  EXPECT_EQ(Slice(28, 4), (std::vector<uint8_t>{'a', 'b', 'c', 0}));
  EXPECT_EQ(Set("S", "abcde"), "text of 5 bytes does not fit in 4");
}

TEST_F(SetFieldTest, ShortBuffer) {
  std::vector<uint8_t> small(4);
  EXPECT_EQ(SetField(kTestLayout, small, "A", "1"), "need 44 bytes, have 4");
}

}  // namespace
}  // namespace softib::codec
