#include "emulation/wear_counters.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

namespace tristore {

std::uint64_t WearCounters::total() const {
  return std::accumulate(writes_.begin(), writes_.end(), std::uint64_t{0});
}

std::vector<std::uint64_t> WearCounters::histogram() const {
  std::vector<std::uint64_t> sorted = writes_;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  return sorted;
}

void WearCounters::reset() { std::fill(writes_.begin(), writes_.end(), 0); }

}  // namespace tristore
