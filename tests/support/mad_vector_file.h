// Reader for tests/data/mad_vectors.txt (format described at the top of that file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace softib::testing {

struct MadVector {
  std::string name;
  std::string layout;
  int line = 0;                     // line of the `vector` keyword
  std::optional<std::size_t> size;  // the layout size the specification gives
  std::vector<uint8_t> bytes;       // as written (not padded)
  // (field, value text) in file order; string values keep their quotes.
  std::vector<std::pair<std::string, std::string>> expect;
  bool complete = false;
};

// Test names print the vector's name, not its bytes.
inline void PrintTo(const MadVector& v, std::ostream* os) { *os << v.name; }

// Parses the file. On a syntax error returns false and sets *error to
// "path:line: message".
bool ReadMadVectors(const std::string& path, std::vector<MadVector>* out, std::string* error);

// True when `text` is a quoted string; *unquoted receives its content.
bool Unquote(const std::string& text, std::string* unquoted);

}  // namespace softib::testing
