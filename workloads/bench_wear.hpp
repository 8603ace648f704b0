#pragma once
// NVM wear over the measured phase (paper Figure 16): the per-line write counts taken before
// it, subtracted after it, and reported as the sorted distribution.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "emulation/wear_counters.hpp"

namespace tristore {

class WearDelta {
 public:
  explicit WearDelta(const WearCounters& before);

  // {"lines", "lines_written", "total_writes", "max_writes", "sorted_runs"}: sorted_runs lists
  // [writes, lines] pairs, most written first, for lines written at least once since the
  // snapshot (run-length encoded: the full per-line list would be megabytes).
  nlohmann::json json(const WearCounters& after) const;

 private:
  std::vector<std::uint64_t> before_;
};

}  // namespace tristore
