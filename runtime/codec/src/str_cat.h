// Small string helpers shared by the codec's sources. StrCat builds strings without
// operator+ chains: GCC 12 at -O3 reports a false -Wrestrict on
// `"literal" + std::string&&` (GCC PR 105329), which -Werror turns into a build failure.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace softib::codec {

inline std::string StrCat(std::initializer_list<std::string_view> parts) {
  std::size_t size = 0;
  for (std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (std::string_view part : parts) out.append(part);
  return out;
}

// ASCII-only: field, table and enum member names are ASCII.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

}  // namespace softib::codec
