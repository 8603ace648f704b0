#include "workloads/bench_phase.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace tristore {

void ProgressPrinter::line(std::string_view phase, double elapsed_s, std::uint64_t ops,
                           double interval_ops_s, const Counters& interval) const {
  if (!enabled_) return;
  fmt::print(
      "{:>7} {:6.1f}s {:>12} ops {:>12.0f} ops/s | nvm lines read {:>10} written {:>9} | ssd "
      "pages read {:>7} written {:>7}\n",
      phase, elapsed_s, ops, interval_ops_s, interval.nvm_lines_read, interval.nvm_lines_written,
      interval.ssd_pages_read, interval.ssd_pages_written);
  std::fflush(stdout);
}

void ProgressPrinter::message(std::string_view text) const {
  if (!enabled_) return;
  fmt::print("{}\n", text);
  std::fflush(stdout);
}

}  // namespace tristore
