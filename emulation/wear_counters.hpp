#pragma once
// How often each NVM cache line was written: NVM cells wear out, so a design that spreads or
// avoids writes lasts longer (paper Figure 16). Threads record side by side (a relaxed add per
// line); the sums are read between runs.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tristore {

class WearCounters {
 public:
  explicit WearCounters(std::uint64_t lines) : writes_(lines, 0) {}

  void record(std::uint64_t first_line, std::uint64_t line_count) {
    for (std::uint64_t line = first_line; line < first_line + line_count; ++line)
      std::atomic_ref(writes_[line]).fetch_add(1, std::memory_order_relaxed);
  }

  std::uint64_t lines() const { return writes_.size(); }
  std::uint64_t writes(std::uint64_t line) const { return writes_[line]; }
  std::uint64_t total() const;
  // Write count of every line, most written first.
  std::vector<std::uint64_t> histogram() const;
  void reset();

 private:
  std::vector<std::uint64_t> writes_;
};

}  // namespace tristore
