#pragma once
// Tags of a set-associative last-level cache, LRU within a set. Only NVM lines that miss it
// are charged the injected NVM latency: a line read twice in a row costs DRAM speed the second
// time, as on real hardware. Shared by every thread that charges the device, as a real LLC
// is: a latch per stripe of kSetsPerStripe consecutive sets (consecutive lines fall in
// consecutive sets, so a page's 256 lines cross few stripes, and two threads meet only where
// their lines share a stripe).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/spin_latch.hpp"

namespace tristore {

class SimulatedLlc {
 public:
  static constexpr std::uint32_t kDefaultWays = 16;
  // Far beyond any real LLC; its tags take an eighth of it in DRAM.
  static constexpr std::uint64_t kMaxBytes = std::uint64_t{4} << 30;
  // Error unless a simulated LLC of `bytes` may be made (0: this machine's size).
  static void require_valid_size(std::uint64_t bytes);

  // bytes = 0: this machine's LLC size (sysconf, else sysfs, else 32 MiB).
  explicit SimulatedLlc(std::uint64_t bytes = 0, std::uint32_t ways = kDefaultWays);

  // Looks up the line (address / 64) and makes it the most recently used of its set.
  // True on a hit; on a miss the set's least recently used line is replaced.
  bool access(std::uint64_t line_address) {
    const std::uint64_t set = line_address % sets_;
    const std::lock_guard latched(stripes_[set / kSetsPerStripe].latch);
    return access_latched(set, line_address);
  }
  // access() for `count` lines from `first`, each stripe's latch taken once per run of lines
  // in it; returns how many missed.
  std::uint64_t access_lines(std::uint64_t first, std::uint64_t count);

  // Not beside access(): between runs.
  void clear();
  std::uint64_t bytes() const { return sets_ * ways_ * 64; }
  std::uint64_t sets() const { return sets_; }
  std::uint32_t ways() const { return ways_; }

  // This machine's last-level cache size in bytes.
  static std::uint64_t machine_llc_bytes();

 private:
  static constexpr std::uint64_t kSetsPerStripe = 64;
  struct alignas(64) Stripe {
    SpinLatch latch;
  };

  bool access_latched(std::uint64_t set, std::uint64_t line_address) {
    std::uint64_t* tags = &tags_[set * ways_];
    const std::uint64_t tag = line_address + 1;  // 0 marks an empty way
    std::uint32_t way = 0;
    while (way < ways_ - 1 && tags[way] != tag) ++way;
    const bool hit = tags[way] == tag;
    for (std::uint32_t i = way; i > 0; --i) tags[i] = tags[i - 1];  // a miss drops the last
    tags[0] = tag;
    return hit;
  }

  std::uint64_t sets_;
  std::uint32_t ways_;
  std::vector<std::uint64_t> tags_;  // sets_ x ways_, most recently used first
  std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace tristore
