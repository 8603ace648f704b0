#include "engine/config.hpp"

#include <array>
#include <utility>

#include "common/error.hpp"

namespace tristore {

namespace {
constexpr std::array<std::pair<Architecture, std::string_view>, 5> kArchitectureNames{{
    {Architecture::kThreeTier, "3tier"},
    {Architecture::kBasicNvm, "basic-nvm"},
    {Architecture::kNvmDirect, "nvm-direct"},
    {Architecture::kSsdBm, "ssd-bm"},
    {Architecture::kMainMemory, "main-memory"},
}};
}  // namespace

std::string_view architecture_name(Architecture arch) {
  for (auto [value, name] : kArchitectureNames)
    if (value == arch) return name;
  return "unknown";
}

Architecture parse_architecture(std::string_view name) {
  for (auto [value, spelling] : kArchitectureNames)
    if (spelling == name) return value;
  fail("unknown architecture '{}' (expected 3tier, basic-nvm, nvm-direct, ssd-bm or main-memory)",
       name);
}

std::string_view open_mode_name(OpenMode mode) {
  switch (mode) {
    case OpenMode::kOpenOrCreate:
      return "open-or-create";
    case OpenMode::kOpenExisting:
      return "open-existing";
    case OpenMode::kCreateNew:
      return "create-new";
    case OpenMode::kCreateReplacing:
      return "create-replacing";
  }
  return "unknown";
}

}  // namespace tristore
