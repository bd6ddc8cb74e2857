#include "softib/wire/hex.h"

#include <cctype>
#include <cstdio>

namespace softib::hex {
namespace {

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Parse(std::string_view text, std::vector<uint8_t>* out) {
  std::size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  if (text.substr(start, 2) == "0x" || text.substr(start, 2) == "0X") start += 2;
  std::vector<uint8_t> bytes;
  int high = -1;
  for (std::size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == ':' || c == '-') {
      if (high >= 0)
        return "hex digit missing after '" + std::string(1, text[i - 1]) + "' at position " +
               std::to_string(i - 1);
      continue;
    }
    const int v = DigitValue(c);
    if (v < 0) {
      std::string shown =
          std::isprint(static_cast<unsigned char>(c))
              ? std::string(1, c)
              : "\\x" + Format(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&c), 1));
      return "bad hex character '" + shown + "' at position " + std::to_string(i);
    }
    if (high < 0) {
      high = v;
    } else {
      bytes.push_back(static_cast<uint8_t>(high << 4 | v));
      high = -1;
    }
  }
  if (high >= 0) return "odd number of hex digits";
  *out = std::move(bytes);
  return "";
}

std::string Format(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 0xF]);
  }
  return s;
}

std::string Dump(std::span<const uint8_t> bytes, int indent) {
  std::string s;
  char buf[24];
  for (std::size_t i = 0; i < bytes.size(); i += 16) {
    s.append(static_cast<std::size_t>(indent), ' ');
    std::snprintf(buf, sizeof buf, "%04zx:", i);
    s += buf;
    for (std::size_t j = i; j < i + 16 && j < bytes.size(); ++j) {
      std::snprintf(buf, sizeof buf, " %02x", bytes[j]);
      s += buf;
    }
    s += '\n';
  }
  return s;
}

std::string Number(uint64_t value, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace softib::hex
