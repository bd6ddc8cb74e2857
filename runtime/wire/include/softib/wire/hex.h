// Hex text <-> bytes for the command line and the test data files.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace softib::hex {

// Parses hex digits; whitespace, ':' and '-' between bytes are ignored, as is a
// leading "0x". Returns an error message (naming the offending character and its
// position), or "" and fills `out`.
std::string Parse(std::string_view text, std::vector<uint8_t>* out);

// "0a1b2c..." without separators.
std::string Format(std::span<const uint8_t> bytes);

// "0x" and `digits` hex digits at least: 0x0010 for (16, 4).
std::string Number(uint64_t value, int digits);

// Lines of 16 bytes: "0000: 01 81 01 01 ...".
std::string Dump(std::span<const uint8_t> bytes, int indent = 0);

}  // namespace softib::hex
