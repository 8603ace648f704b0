#include "emulation/tsc.hpp"

#include <chrono>

namespace tristore {

TscClock TscClock::calibrate() {
  using Clock = std::chrono::steady_clock;
  // 1. Take the best of a few short windows: a preemption only lengthens a window.
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto start_time = Clock::now();
    const std::uint64_t start_ticks = now();
    while (Clock::now() - start_time < std::chrono::milliseconds(3)) {
    }
    const std::uint64_t ticks = now() - start_ticks;
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_time).count();
    const double ratio = static_cast<double>(ticks) / static_cast<double>(ns);
    // 2. A preempted window has fewer ticks per elapsed ns only if the TSC stops; it does
    //    not on invariant-TSC machines, so all windows agree closely. Keep the largest.
    if (ratio > best) best = ratio;
  }
  return TscClock(best);
}

}  // namespace tristore
