#include "workloads/bench_wear.hpp"

#include <algorithm>
#include <functional>

namespace tristore {

WearDelta::WearDelta(const WearCounters& before) : before_(before.lines()) {
  for (std::uint64_t line = 0; line < before_.size(); ++line) before_[line] = before.writes(line);
}

nlohmann::json WearDelta::json(const WearCounters& after) const {
  // 1. Writes per line since the snapshot, lines never written left out.
  std::vector<std::uint64_t> writes;
  std::uint64_t total = 0;
  for (std::uint64_t line = 0; line < before_.size() && line < after.lines(); ++line) {
    const std::uint64_t delta = after.writes(line) - before_[line];
    if (delta == 0) continue;
    writes.push_back(delta);
    total += delta;
  }
  std::sort(writes.begin(), writes.end(), std::greater<>());

  // 2. Run-length encode the sorted counts.
  nlohmann::json runs = nlohmann::json::array();
  for (std::size_t i = 0; i < writes.size();) {
    std::size_t j = i;
    while (j < writes.size() && writes[j] == writes[i]) ++j;
    runs.push_back({writes[i], j - i});
    i = j;
  }
  return {{"lines", after.lines()},
          {"lines_written", writes.size()},
          {"total_writes", total},
          {"max_writes", writes.empty() ? 0 : writes.front()},
          {"sorted_runs", runs}};
}

}  // namespace tristore
