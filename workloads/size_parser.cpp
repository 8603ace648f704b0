#include "workloads/size_parser.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/error.hpp"

namespace tristore {

namespace {

struct Unit {
  std::string_view name;
  int shift;
};

constexpr std::array<Unit, 14> kUnits{{
    {"", 0},
    {"b", 0},
    {"k", 10},
    {"kb", 10},
    {"kib", 10},
    {"m", 20},
    {"mb", 20},
    {"mib", 20},
    {"g", 30},
    {"gb", 30},
    {"gib", 30},
    {"t", 40},
    {"tb", 40},
    {"tib", 40},
}};

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  // 1. Split into number and unit.
  std::size_t number_end = 0;
  while (number_end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[number_end])) || text[number_end] == '.'))
    ++number_end;
  std::string_view number = text.substr(0, number_end);
  std::string unit = lowercase(text.substr(number_end));
  if (number.empty()) fail("invalid size '{}': expected a number with a unit, e.g. 200MiB", text);

  // 2. Find the unit's power of two.
  int shift = -1;
  for (const Unit& candidate : kUnits)
    if (candidate.name == unit) shift = candidate.shift;
  if (shift < 0)
    fail("invalid size '{}': unknown unit '{}' (use B, KiB, MiB, GiB or TiB)", text, unit);

  // 3. Integers are exact; decimals ("1.5GiB") are rounded down to whole bytes.
  const double multiplier = std::ldexp(1.0, shift);
  if (number.find('.') == std::string_view::npos) {
    std::uint64_t value = 0;
    auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc{} || end != number.data() + number.size() ||
        (shift > 0 && value > (~std::uint64_t{0} >> shift)))
      fail("invalid size '{}': too large", text);
    return value << shift;
  }
  double value = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error != std::errc{} || end != number.data() + number.size())
    fail("invalid size '{}': malformed number", text);
  const double bytes = value * multiplier;
  if (!(bytes < 18446744073709551616.0)) fail("invalid size '{}': too large", text);
  return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
  constexpr std::array<std::pair<int, std::string_view>, 4> kLargestFirst{
      {{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}}};
  for (auto [shift, name] : kLargestFirst) {
    const std::uint64_t unit = std::uint64_t{1} << shift;
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, name);
  }
  return fmt::format("{}B", bytes);
}

std::string human_size(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnitNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnitNames.size()) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{}B", bytes) : fmt::format("{:.1f}{}", value, kUnitNames[unit]);
}

}  // namespace tristore
