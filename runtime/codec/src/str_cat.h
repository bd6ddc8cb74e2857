// String building without operator+ chains: GCC 12 at -O3 reports a false
// -Wrestrict on `"literal" + std::string&&` (GCC PR 105329), which -Werror
// turns into a build failure.
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

}  // namespace softib::codec
