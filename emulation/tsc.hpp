#pragma once
// Busy-waiting on the time-stamp counter: the only way to add a few hundred nanoseconds to a
// memory access without the scheduler's microsecond granularity getting in the way.
#include <x86intrin.h>

#include <cstdint>

namespace tristore {

class TscClock {
 public:
  // Measures TSC ticks per nanosecond against the steady clock (takes about 10 ms).
  static TscClock calibrate();
  explicit TscClock(double ticks_per_ns) : ticks_per_ns_(ticks_per_ns) {}

  double ticks_per_ns() const { return ticks_per_ns_; }
  std::uint64_t ticks(std::uint64_t ns) const {
    return static_cast<std::uint64_t>(static_cast<double>(ns) * ticks_per_ns_);
  }

  static std::uint64_t now() { return __rdtsc(); }

  void spin_ticks(std::uint64_t ticks) const {
    const std::uint64_t end = now() + ticks;
    while (now() < end) _mm_pause();
  }
  void spin_ns(std::uint64_t ns) const { spin_ticks(ticks(ns)); }

 private:
  double ticks_per_ns_;
};

}  // namespace tristore
