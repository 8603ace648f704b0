#pragma once
// Tags of a set-associative last-level cache, LRU within a set. Only NVM lines that miss it
// are charged the injected NVM latency: a line read twice in a row costs DRAM speed the second
// time, as on real hardware. Not thread-safe (one per device, single writer per tier).
#include <cstddef>
#include <cstdint>
#include <vector>

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
    std::uint64_t* set = &tags_[(line_address % sets_) * ways_];
    const std::uint64_t tag = line_address + 1;  // 0 marks an empty way
    for (std::uint32_t way = 0; way < ways_; ++way) {
      if (set[way] == tag) {
        for (std::uint32_t i = way; i > 0; --i) set[i] = set[i - 1];
        set[0] = tag;
        return true;
      }
    }
    for (std::uint32_t i = ways_ - 1; i > 0; --i) set[i] = set[i - 1];
    set[0] = tag;
    return false;
  }

  void clear();
  std::uint64_t bytes() const { return sets_ * ways_ * 64; }
  std::uint64_t sets() const { return sets_; }
  std::uint32_t ways() const { return ways_; }

  // This machine's last-level cache size in bytes.
  static std::uint64_t machine_llc_bytes();

 private:
  std::uint64_t sets_;
  std::uint32_t ways_;
  std::vector<std::uint64_t> tags_;  // sets_ x ways_, most recently used first
};

}  // namespace tristore
