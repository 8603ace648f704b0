#pragma once
// Throughput in short intervals (tristore-bench --restart): the curve of paper Figure 17 needs
// the rate every ~100 ms, not one number per phase.
#include <chrono>
#include <cstdint>

#include "common/counters.hpp"
#include "engine/database.hpp"

namespace tristore {

using SteadyClock = std::chrono::steady_clock;

// One closed interval. CLOCK_MONOTONIC is system-wide on Linux, so `end` compares across
// the crashed child and the restarted parent.
struct ThroughputSample {
  SteadyClock::time_point end;
  double seconds = 0;
  std::uint64_t ops = 0;
  Counters counters;  // the database's counters at `end` (absolute)
};

// Runs op() until sink(sample) returns false, closing an interval every `interval`. The clock
// is read once per batch; the batch adapts so that fast operations pay for it rarely and slow
// ones (an SSD read) do not overrun the interval's end.
template <typename Op, typename Sink>
void run_sampled(Database& db, SteadyClock::duration interval, Op&& op, Sink&& sink) {
  constexpr std::uint64_t kMaxBatch = 64;
  constexpr auto kShortBatch = std::chrono::microseconds(50);
  std::uint64_t batch_size = 1;
  SteadyClock::time_point start = SteadyClock::now();
  SteadyClock::time_point interval_end = start + interval;
  SteadyClock::time_point now = start;
  std::uint64_t ops = 0;
  for (;;) {
    for (std::uint64_t i = 0; i < batch_size; ++i) op();
    ops += batch_size;
    const SteadyClock::time_point batch_start = now;
    now = SteadyClock::now();
    if (now - batch_start < kShortBatch) {
      if (batch_size < kMaxBatch) batch_size *= 2;
    } else if (batch_size > 1) {
      batch_size /= 2;
    }
    if (now < interval_end) continue;
    const ThroughputSample sample{now, std::chrono::duration<double>(now - start).count(), ops,
                                  db.counters()};
    if (!sink(sample)) return;
    start = now;
    interval_end = now + interval;
    ops = 0;
  }
}

}  // namespace tristore
