#pragma once
// The phases of a tristore-bench run (load, warm-up, measured) and the loop that times one:
// counters are read before and after, so each phase reports only its own events. A phase
// may run on several threads.
#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/counters.hpp"
#include "engine/database.hpp"
#include "workloads/adaptive_batch.hpp"
#include "workloads/phase_threads.hpp"

namespace tristore {

struct PhaseResult {
  double seconds = 0;
  std::uint64_t ops = 0;  // of every thread
  std::vector<std::uint64_t> ops_by_thread;
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

// Runs op(thread) on `threads` threads (thread 0 on the caller's), each its own batch loop,
// until the limit: the deadline is common, an operation count is split between the threads.
// op must not throw except to abort the run; the first exception is rethrown after every
// thread stopped. Thread 0 prints the progress lines, with every thread's operations.
template <typename Op>
PhaseResult run_phase(Database& db, std::string_view phase, PhaseLimit limit,
                      const ProgressPrinter& progress, unsigned threads, Op&& op) {
  using Clock = std::chrono::steady_clock;
  // Read the clock once per batch (workloads/adaptive_batch.hpp).
  constexpr auto kShortBatch = std::chrono::microseconds(100);
  PhaseThreads phase_threads(threads);
  const Counters counters_before = db.counters();
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(limit.seconds));

  const auto worker = [&](unsigned thread) {
    const std::uint64_t my_limit =
        limit.ops / threads + (thread < limit.ops % threads ? 1 : 0);  // limit.ops != 0
    AdaptiveBatch adaptive(kShortBatch);
    Clock::time_point next_report = start + std::chrono::seconds(1);
    Clock::time_point last_report = start;
    std::uint64_t ops_at_last_report = 0;
    Counters counters_at_last_report = counters_before;
    std::uint64_t ops = 0;
    Clock::time_point now = start;
    for (;;) {
      std::uint64_t batch = adaptive.size();
      if (limit.ops != 0) {
        if (ops >= my_limit) break;
        if (my_limit - ops < batch) batch = my_limit - ops;
      } else if (now >= deadline) {
        break;
      }
      if (phase_threads.stopping()) break;
      for (std::uint64_t i = 0; i < batch; ++i) op(thread);
      ops += batch;
      phase_threads.publish(thread, ops);
      const Clock::time_point batch_start = now;
      now = Clock::now();
      adaptive.adapt(now - batch_start);
      if (thread == 0 && progress.enabled() && now >= next_report) {
        const Counters counters_now = db.counters();
        std::uint64_t all_ops = 0;
        for (unsigned t = 0; t < threads; ++t) all_ops += phase_threads.ops(t);
        const double interval_s = std::chrono::duration<double>(now - last_report).count();
        progress.line(phase, std::chrono::duration<double>(now - start).count(), all_ops,
                      static_cast<double>(all_ops - ops_at_last_report) / interval_s,
                      counters_now - counters_at_last_report);
        last_report = now;
        ops_at_last_report = all_ops;
        counters_at_last_report = counters_now;
        next_report += std::chrono::seconds(1);
        if (next_report < now) next_report = now + std::chrono::seconds(1);
      }
    }
  };
  phase_threads.run(worker);

  PhaseResult result;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (unsigned t = 0; t < threads; ++t) {
    result.ops_by_thread.push_back(phase_threads.ops(t));
    result.ops += result.ops_by_thread.back();
  }
  result.counters = db.counters() - counters_before;
  return result;
}

// One thread: op().
template <typename Op>
PhaseResult run_phase(Database& db, std::string_view phase, PhaseLimit limit,
                      const ProgressPrinter& progress, Op&& op) {
  return run_phase(db, phase, limit, progress, 1, [&op](unsigned) { op(); });
}

}  // namespace tristore
