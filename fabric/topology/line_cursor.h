// A cursor over one line of a topology file: the small lexing steps the reader needs
// (spaces, words, numbers, quoted strings, [n] and (hex) groups), each of which either
// consumes what it recognises or leaves the cursor where it was.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace softib::fabric {

class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : rest_(text) {}

  std::string_view rest() const { return rest_; }
  bool done() const { return rest_.empty(); }
  char peek() const { return rest_.empty() ? '\0' : rest_.front(); }

  void SkipSpaces() {
    while (!rest_.empty() && (rest_.front() == ' ' || rest_.front() == '\t'))
      rest_.remove_prefix(1);
  }
  bool Consume(char c) {
    if (rest_.empty() || rest_.front() != c) return false;
    rest_.remove_prefix(1);
    return true;
  }
  bool ConsumeWord(std::string_view word) {
    if (rest_.substr(0, word.size()) != word) return false;
    rest_.remove_prefix(word.size());
    return true;
  }
  // A run of characters up to the next space, tab or `stop` character.
  std::string_view Token(std::string_view stops = "") {
    std::size_t n = 0;
    while (n < rest_.size() && rest_[n] != ' ' && rest_[n] != '\t' &&
           stops.find(rest_[n]) == std::string_view::npos)
      ++n;
    std::string_view t = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return t;
  }
  // Decimal, or hexadecimal after 0x; empty on no digits or on overflow (cursor kept).
  std::optional<uint64_t> Number() {
    if (rest_.size() > 2 && rest_[0] == '0' && (rest_[1] == 'x' || rest_[1] == 'X')) {
      std::string_view save = rest_;
      rest_.remove_prefix(2);
      if (auto v = Digits(16)) return v;
      rest_ = save;
      return std::nullopt;
    }
    return Digits(10);
  }
  std::optional<uint64_t> Hex() { return Digits(16); }
  // "text" -> text; nullopt when there is no opening quote; `unterminated` when there is
  // an opening quote but no closing one.
  std::optional<std::string_view> Quoted(bool* unterminated) {
    *unterminated = false;
    if (peek() != '"') return std::nullopt;
    const std::size_t close = rest_.find('"', 1);
    if (close == std::string_view::npos) {
      *unterminated = true;
      return std::nullopt;
    }
    std::string_view inside = rest_.substr(1, close - 1);
    rest_.remove_prefix(close + 1);
    return inside;
  }

 private:
  std::optional<uint64_t> Digits(unsigned base) {
    uint64_t v = 0;
    std::size_t n = 0;
    for (; n < rest_.size(); ++n) {
      const char c = rest_[n];
      unsigned d;
      if (c >= '0' && c <= '9') {
        d = static_cast<unsigned>(c - '0');
      } else if (base == 16 && c >= 'a' && c <= 'f') {
        d = static_cast<unsigned>(c - 'a' + 10);
      } else if (base == 16 && c >= 'A' && c <= 'F') {
        d = static_cast<unsigned>(c - 'A' + 10);
      } else {
        break;
      }
      if (v > (UINT64_MAX - d) / base) return std::nullopt;  // overflow
      v = v * base + d;
    }
    if (n == 0) return std::nullopt;
    rest_.remove_prefix(n);
    return v;
  }

  std::string_view rest_;
};

}  // namespace softib::fabric
