#pragma once
// Throughput in short intervals (tristore-bench --restart): the curve of paper Figure 17 needs
// the rate every ~100 ms, not one number per phase.
#include <chrono>
#include <cstdint>
#include <vector>

#include "common/counters.hpp"
#include "engine/database.hpp"
#include "workloads/adaptive_batch.hpp"
#include "workloads/phase_threads.hpp"

namespace tristore {

using SteadyClock = std::chrono::steady_clock;

// One closed interval. CLOCK_MONOTONIC is system-wide on Linux, so `end` compares across
// the crashed child and the restarted parent.
struct ThroughputSample {
  SteadyClock::time_point end;
  double seconds = 0;
  std::uint64_t ops = 0;                     // of every thread
  std::vector<std::uint64_t> ops_by_thread;  // the interval's, thread by thread
  Counters counters;                         // the database's counters at `end` (absolute)
};

// Runs op(thread) on `threads` threads (thread 0 on the caller's) until sink(sample) returns
// false, closing an interval every `interval`. Thread 0 closes them, with every thread's
// operations as far as each has published them (once per batch: an interval may show up to a
// batch of another thread's operations late, never twice). Each thread reads the clock once
// per batch (workloads/adaptive_batch.hpp). op must not throw except to end the run: the first
// exception is rethrown once every thread has stopped.
template <typename Op, typename Sink>
void run_sampled(Database& db, SteadyClock::duration interval, unsigned threads, Op&& op,
                 Sink&& sink) {
  constexpr auto kShortBatch = std::chrono::microseconds(50);
  PhaseThreads phase_threads(threads);
  phase_threads.run([&](unsigned thread) {
    AdaptiveBatch batch(kShortBatch);
    std::uint64_t ops = 0;
    std::vector<std::uint64_t> ops_before(threads, 0);  // thread 0's, at the interval's start
    SteadyClock::time_point start = SteadyClock::now();
    SteadyClock::time_point interval_end = start + interval;
    SteadyClock::time_point now = start;
    while (!phase_threads.stopping()) {
      for (std::uint64_t i = 0; i < batch.size(); ++i) op(thread);
      ops += batch.size();
      phase_threads.publish(thread, ops);
      const SteadyClock::time_point batch_start = now;
      now = SteadyClock::now();
      batch.adapt(now - batch_start);
      if (thread != 0 || now < interval_end) continue;
      // Thread 0 closes the interval; the sink's false stops every thread.
      ThroughputSample sample{now, std::chrono::duration<double>(now - start).count(), 0,
                              std::vector<std::uint64_t>(threads), db.counters()};
      for (unsigned t = 0; t < threads; ++t) {
        const std::uint64_t done = phase_threads.ops(t);
        sample.ops_by_thread[t] = done - ops_before[t];
        sample.ops += sample.ops_by_thread[t];
        ops_before[t] = done;
      }
      if (!sink(sample)) phase_threads.stop();
      start = now;
      interval_end = now + interval;
    }
  });
}

}  // namespace tristore
