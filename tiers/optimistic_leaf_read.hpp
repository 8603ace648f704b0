#pragma once
// A leaf read without its latch, against the version of the latch word that main-memory and
// nvm-direct keep per page (common/shared_spin_latch.hpp), as ResidentWrites::read_leaf reads
// a buffer frame: read() runs again while a change ran beside it (the word's version moved),
// and after kOptimisticAttempts spoilt tries under the shared latch (latch_shared()), which
// waits its turn. read() must stay inside the page whatever bytes it finds (the B-tree bounds
// its counts) and may write only what the next try writes over.
#include <cstdint>

#include "common/ignoring_racing_reads.hpp"
#include "common/shared_spin_latch.hpp"

namespace tristore {

inline constexpr unsigned kOptimisticAttempts = 4;

template <typename Read, typename LatchShared>
auto optimistic_leaf_read(std::uint64_t& word, std::uint64_t& retried, Read& read,
                          LatchShared&& latch_shared) {
  const SharedSpinLatch latch(word);
  for (unsigned attempt = 0; attempt < kOptimisticAttempts; ++attempt) {
    const std::uint64_t version = latch.optimistic_version();
    auto result = [&] {
      [[maybe_unused]] const IgnoringRacingReads ignoring;
      return read();
    }();
    if (latch.unchanged_since(version)) [[likely]]
      return result;
    ++retried;
  }
  latch_shared();
  return read();
}

}  // namespace tristore
