#pragma once
// Threads reading pattern pages (tests/tiers_pattern_pages.hpp) at random as the database
// reads: shared through ResidentReads, and, when told to retry, exclusive through the buffer
// manager. For buffer-manager tests of readers missing beside each other.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "common/page_format.hpp"
#include "engine/operation_latch.hpp"
#include "tests/tiers_pattern_pages.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/resident_reads.hpp"
#include "tiers/swip.hpp"

namespace tristore::testing {

// `threads` threads each read `reads` random 64-byte ranges of `pages` (one read in
// `whole_one_in` the whole page instead; 0: none), thread t with seed + t. Every byte read
// must be the page's (checked per thread). Returns how many reads ran again exclusively.
inline int read_pattern_pages_side_by_side(BufferManager& bm, OperationLatch& latch,
                                           std::vector<Swip>& pages, int threads, int reads,
                                           std::uint64_t seed, unsigned whole_one_in = 0) {
  std::vector<int> wrong(static_cast<std::size_t>(threads), 0);
  std::vector<int> retried(static_cast<std::size_t>(threads), 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      std::mt19937_64 random(seed + static_cast<std::uint64_t>(t));
      const auto mine = static_cast<std::size_t>(t);
      for (int i = 0; i < reads; ++i) {
        const std::size_t p = random() % pages.size();
        const bool whole = whole_one_in != 0 && random() % whole_one_in == 0;
        const auto at = static_cast<std::uint32_t>(kPageHeaderSize +
                                                   random() % (kPageSize - kPageHeaderSize - 64));
        auto check = [&](auto& page) {
          if (whole) return page.whole_page()[at] != pattern(at, p);
          const std::byte* bytes = page.read(at, 64);
          for (std::size_t b = 0; b < 64; ++b)
            if (bytes[b] != pattern(at + b, p)) return true;
          return false;
        };
        try {
          const OperationLatch::Shared shared(latch);
          ResidentReads resident(bm);
          ResidentReads::Guard page = resident.fix(pages[p], nullptr);
          wrong[mine] += check(page);
          continue;
        } catch (const ResidentReads::NotResident&) {
          ++retried[mine];
        }
        const OperationLatch::Exclusive exclusive(latch, OperationLatch::Purpose::kRead);
        BufferManager::Guard page = bm.fix(pages[p], nullptr);
        wrong[mine] += check(page);
      }
    });
  for (std::thread& worker : workers) worker.join();
  int retries = 0;
  for (std::size_t t = 0; t < wrong.size(); ++t) {
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
    retries += retried[t];
  }
  return retries;
}

}  // namespace tristore::testing
