// A small hand-written layout for the engine tests, independent of the IDL.
//   byte 0: A (4 bits, uint) | B (4 bits, enum Color)
//   bytes 1-2: C (16 bits)     byte 3: D (1 bit, bool) | R (7 bits, reserved)
//   bytes 4-5: E[2] (8 bits)   bytes 6-8: W (24 bits)   bytes 9-10: Q (12 bits @ 9[3]) ...
//   bytes 12-27: G (gid)       bytes 28-31: S (string)  bytes 32-35: Y (bytes)
//   bytes 36-43: L (64 bits)
#pragma once

#include "softib/codec/format_desc.h"

namespace softib::codec::test {

inline constexpr EnumValue kColorValues[] = {{"RED", 1}, {"GREEN", 2}, {"BLUE", 7}};
inline constexpr EnumDesc kColor = {"Color", kColorValues};

inline constexpr FieldDesc kTestFields[] = {
    {"A", 0, 4, 1, 4, FieldKind::kUInt, false, nullptr, -1},
    {"B", 4, 4, 1, 4, FieldKind::kEnum, false, &kColor, -1},
    {"C", 8, 16, 1, 16, FieldKind::kUInt, false, nullptr, 0},
    {"D", 24, 1, 1, 1, FieldKind::kBool, false, nullptr, 1},
    {"R", 25, 7, 1, 7, FieldKind::kUInt, true, nullptr, -1},
    {"E", 32, 8, 2, 8, FieldKind::kUInt, false, nullptr, 2},
    {"W", 48, 24, 1, 24, FieldKind::kUInt, false, nullptr, -1},
    {"Q", 76, 12, 1, 12, FieldKind::kUInt, false, nullptr, -1},
    {"G", 96, 128, 1, 128, FieldKind::kGid, false, nullptr, -1},
    {"S", 224, 32, 1, 32, FieldKind::kString, false, nullptr, -1},
    {"Y", 256, 32, 1, 32, FieldKind::kBytes, false, nullptr, -1},
    {"L", 288, 64, 1, 64, FieldKind::kUInt, false, nullptr, -1},
};

inline constexpr FormatDesc kTestLayout = {
    "TestLayout", FormatKind::kFormat, 44, kTestFields, 0, {}, "", "engine test layout"};

}  // namespace softib::codec::test
