#pragma once
// Throughput in short intervals (tristore-bench --restart): the curve of paper Figure 17 needs
// the rate every ~100 ms, not one number per phase.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/counters.hpp"
#include "engine/database.hpp"
#include "workloads/adaptive_batch.hpp"

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
  struct alignas(64) ThreadOps {
    std::atomic<std::uint64_t> ops{0};
  };
  std::vector<ThreadOps> thread_ops(threads);
  std::atomic<bool> stop{false};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  const auto note_failure = [&] {
    stop.store(true, std::memory_order_relaxed);
    const std::lock_guard lock(failure_mutex);
    if (!failure) failure = std::current_exception();
  };

  // 1. Threads 1.. run batches and publish their counts until told to stop.
  const auto other = [&](unsigned thread) {
    try {
      AdaptiveBatch batch(kShortBatch);
      std::uint64_t ops = 0;
      SteadyClock::time_point now = SteadyClock::now();
      while (!stop.load(std::memory_order_relaxed)) {
        for (std::uint64_t i = 0; i < batch.size(); ++i) op(thread);
        ops += batch.size();
        thread_ops[thread].ops.store(ops, std::memory_order_relaxed);
        const SteadyClock::time_point batch_start = now;
        now = SteadyClock::now();
        batch.adapt(now - batch_start);
      }
    } catch (...) {
      note_failure();
    }
  };
  std::vector<std::thread> others;
  for (unsigned thread = 1; thread < threads; ++thread) others.emplace_back(other, thread);

  // 2. Thread 0 runs its own batches and closes the intervals.
  try {
    AdaptiveBatch batch(kShortBatch);
    std::uint64_t ops = 0;
    std::vector<std::uint64_t> ops_before(threads, 0);
    SteadyClock::time_point start = SteadyClock::now();
    SteadyClock::time_point interval_end = start + interval;
    SteadyClock::time_point now = start;
    while (!stop.load(std::memory_order_relaxed)) {
      for (std::uint64_t i = 0; i < batch.size(); ++i) op(0u);
      ops += batch.size();
      const SteadyClock::time_point batch_start = now;
      now = SteadyClock::now();
      batch.adapt(now - batch_start);
      if (now < interval_end) continue;
      ThroughputSample sample{now, std::chrono::duration<double>(now - start).count(), 0,
                              std::vector<std::uint64_t>(threads), db.counters()};
      for (unsigned thread = 0; thread < threads; ++thread) {
        const std::uint64_t done =
            thread == 0 ? ops : thread_ops[thread].ops.load(std::memory_order_relaxed);
        sample.ops_by_thread[thread] = done - ops_before[thread];
        sample.ops += sample.ops_by_thread[thread];
        ops_before[thread] = done;
      }
      if (!sink(sample)) break;
      start = now;
      interval_end = now + interval;
    }
  } catch (...) {
    note_failure();
  }

  // 3. Every thread stopped before anything is rethrown or returned.
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& thread : others) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tristore
