#include "emulation/llc_simulator.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "common/error.hpp"

namespace tristore {

SimulatedLlc::SimulatedLlc(std::uint64_t bytes, std::uint32_t ways) : ways_(ways) {
  if (ways == 0) fail("simulated LLC needs at least one way");
  if (bytes == 0) bytes = machine_llc_bytes();
  require_valid_size(bytes);
  sets_ = std::max<std::uint64_t>(1, bytes / (std::uint64_t{ways} * 64));
  tags_.assign(sets_ * ways_, 0);
  stripes_ = std::make_unique<Stripe[]>((sets_ + kSetsPerStripe - 1) / kSetsPerStripe);
}

std::uint64_t SimulatedLlc::access_lines(std::uint64_t first, std::uint64_t count) {
  std::uint64_t misses = 0;
  for (std::uint64_t line = first; line < first + count;) {
    const std::uint64_t set = line % sets_;
    // The run of lines whose sets follow on in this stripe (it ends at the stripe's last set,
    // or where the sets wrap around to 0).
    const std::uint64_t stripe_end = std::min(sets_, (set / kSetsPerStripe + 1) * kSetsPerStripe);
    const std::uint64_t run = std::min(first + count - line, stripe_end - set);
    const std::lock_guard latched(stripes_[set / kSetsPerStripe].latch);
    for (std::uint64_t i = 0; i < run; ++i) misses += access_latched(set + i, line + i) ? 0 : 1;
    line += run;
  }
  return misses;
}

void SimulatedLlc::require_valid_size(std::uint64_t bytes) {
  if (bytes > kMaxBytes)
    fail("simulated LLC of {} bytes: at most {} bytes (4 GiB)", bytes, kMaxBytes);
}

void SimulatedLlc::clear() { std::fill(tags_.begin(), tags_.end(), 0); }

std::uint64_t SimulatedLlc::machine_llc_bytes() {
  // 1. glibc knows the L3 (and L2 when there is no L3) on x86.
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = sysconf(name);
    if (bytes > 0) return static_cast<std::uint64_t>(bytes);
  }
  // 2. Otherwise the highest cache level sysfs describes for cpu0.
  std::uint64_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) +
                       "/size");
    std::string text;
    if (!(file >> text)) break;
    std::uint64_t value = std::stoull(text);
    if (text.back() == 'K') value <<= 10;
    if (text.back() == 'M') value <<= 20;
    largest = std::max(largest, value);
  }
  // 3. A typical server L3 when nothing answers.
  return largest != 0 ? largest : (32ull << 20);
}

}  // namespace tristore
