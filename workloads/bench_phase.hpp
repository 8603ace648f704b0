#pragma once
// The phases of a tristore-bench run (load, warm-up, measured) and the loop that times one:
// counters are read before and after, so each phase reports only its own events.
#include <chrono>
#include <cstdint>
#include <string_view>

#include "common/counters.hpp"
#include "engine/database.hpp"

namespace tristore {

struct PhaseResult {
  double seconds = 0;
  std::uint64_t ops = 0;
  Counters counters;  // events of this phase only
};

struct PhaseLimit {
  double seconds = 0;     // stop after this long ...
  std::uint64_t ops = 0;  // ... or, when non-zero, after exactly this many operations
};

// Prints one progress line per second to stdout when enabled.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  void line(std::string_view phase, double elapsed_s, std::uint64_t ops, double interval_ops_s,
            const Counters& interval) const;
  void message(std::string_view text) const;

 private:
  bool enabled_;
};

// Runs op() (one operation each) until the limit; op must not throw except to abort the run.
template <typename Op>
PhaseResult run_phase(Database& db, std::string_view phase, PhaseLimit limit,
                      const ProgressPrinter& progress, Op&& op) {
  using Clock = std::chrono::steady_clock;
  // Read the clock once per batch; the batch adapts so that fast operations (~1 us) pay for
  // the clock rarely and slow ones (a full scan) do not overrun the deadline.
  constexpr std::uint64_t kMaxBatch = 64;
  constexpr auto kShortBatch = std::chrono::microseconds(100);
  std::uint64_t batch_size = 1;
  const Counters counters_before = db.counters();
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(limit.seconds));
  Clock::time_point next_report = start + std::chrono::seconds(1);
  Clock::time_point last_report = start;
  std::uint64_t ops_at_last_report = 0;
  Counters counters_at_last_report = counters_before;

  std::uint64_t ops = 0;
  Clock::time_point now = start;
  for (;;) {
    std::uint64_t batch = batch_size;
    if (limit.ops != 0) {
      if (ops >= limit.ops) break;
      if (limit.ops - ops < batch) batch = limit.ops - ops;
    } else if (now >= deadline) {
      break;
    }
    for (std::uint64_t i = 0; i < batch; ++i) op();
    ops += batch;
    const Clock::time_point batch_start = now;
    now = Clock::now();
    if (now - batch_start < kShortBatch) {
      if (batch_size < kMaxBatch) batch_size *= 2;
    } else if (batch_size > 1) {
      batch_size /= 2;
    }
    if (now >= next_report) {
      const Counters counters_now = db.counters();
      const double interval_s = std::chrono::duration<double>(now - last_report).count();
      progress.line(phase, std::chrono::duration<double>(now - start).count(), ops,
                    static_cast<double>(ops - ops_at_last_report) / interval_s,
                    counters_now - counters_at_last_report);
      last_report = now;
      ops_at_last_report = ops;
      counters_at_last_report = counters_now;
      next_report += std::chrono::seconds(1);
      if (next_report < now) next_report = now + std::chrono::seconds(1);
    }
  }
  PhaseResult result;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.ops = ops;
  result.counters = db.counters() - counters_before;
  return result;
}

}  // namespace tristore
