#pragma once
// A short name stored in a fixed-size char array of an on-disk struct: NUL-padded, so the
// bytes are deterministic (they are checksummed) and readable in a hex dump.
#include <algorithm>
#include <cstddef>
#include <string_view>

namespace tristore {

// Names longer than the field are cut; callers store names they know to fit.
template <std::size_t N>
void store_fixed_name(char (&field)[N], std::string_view name) {
  std::fill(field, field + N, '\0');
  std::copy_n(name.begin(), std::min(name.size(), N), field);
}

template <std::size_t N>
std::string_view fixed_name(const char (&field)[N]) {
  return {field, static_cast<std::size_t>(std::find(field, field + N, '\0') - field)};
}

}  // namespace tristore
