#include "mad_vector_file.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace softib::testing {
namespace {

// Splits on whitespace; a double-quoted run (no escapes) stays one token.
std::vector<std::string> Tokens(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool ParseHexByte(const std::string& token, uint8_t* out) {
  if (token.size() != 2 || !std::isxdigit(static_cast<unsigned char>(token[0])) ||
      !std::isxdigit(static_cast<unsigned char>(token[1])))
    return false;
  *out = static_cast<uint8_t>(std::stoul(token, nullptr, 16));
  return true;
}

}  // namespace

bool Unquote(const std::string& text, std::string* unquoted) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return false;
  *unquoted = text.substr(1, text.size() - 2);
  return true;
}

bool ReadMadVectors(const std::string& path, std::vector<MadVector>* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  std::string line;
  int lineno = 0;
  MadVector* cur = nullptr;
  std::string section;  // the keyword a continuation line continues
  auto fail = [&](const std::string& message) {
    *error = path + ":" + std::to_string(lineno) + ": " + message;
    return false;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    auto tokens = Tokens(line);
    if (tokens.empty()) continue;
    const bool continuation = std::isspace(static_cast<unsigned char>(line[0]));
    std::string keyword = section;
    if (!continuation) {
      keyword = tokens.front();
      tokens.erase(tokens.begin());
    }
    if (keyword == "vector") {
      if (cur != nullptr) return fail("vector '" + cur->name + "' has no 'end'");
      if (tokens.size() != 1) return fail("'vector' takes one name");
      out->push_back({});
      cur = &out->back();
      cur->name = tokens[0];
      cur->line = lineno;
    } else if (cur == nullptr) {
      return fail("'" + keyword + "' outside a vector");
    } else if (keyword == "layout") {
      if (tokens.size() != 1) return fail("'layout' takes one name");
      cur->layout = tokens[0];
    } else if (keyword == "size") {
      if (tokens.size() != 1) return fail("'size' takes one number");
      cur->size = std::stoul(tokens[0]);
    } else if (keyword == "bytes") {
      for (const auto& t : tokens) {
        uint8_t b;
        if (!ParseHexByte(t, &b)) return fail("bad byte '" + t + "'");
        cur->bytes.push_back(b);
      }
    } else if (keyword == "expect") {
      for (const auto& t : tokens) {
        const auto eq = t.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == t.size())
          return fail("expected Field=Value, got '" + t + "'");
        cur->expect.emplace_back(t.substr(0, eq), t.substr(eq + 1));
      }
    } else if (keyword == "complete") {
      cur->complete = true;
    } else if (keyword == "end") {
      if (cur->layout.empty()) return fail("vector '" + cur->name + "' has no layout");
      if (cur->bytes.empty()) return fail("vector '" + cur->name + "' has no bytes");
      cur = nullptr;
    } else {
      return fail("unknown keyword '" + keyword + "'");
    }
    section = keyword;
  }
  if (cur != nullptr) return fail("vector '" + cur->name + "' has no 'end'");
  return true;
}

}  // namespace softib::testing
