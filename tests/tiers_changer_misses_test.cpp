// Misses of changes beside each other (tiers/changer_misses.cpp), reached through
// ResidentWrites (tiers/resident_writes.hpp): a change that finds a page not in DRAM loads it
// into a free frame under the miss latch (from NVM, or read from SSD outside it) and swizzles
// its swip, while the other changes go on; with no frame free it is told to bring the page in
// another way (RetryExclusively, needs_loading), having evicted ahead where the changes'
// slots tell when the frames it let go may come back (BufferManager::change_beside), nothing
// otherwise. Lines that do not simply append move the page to a sorted copy or a full frame,
// the change with it. Threads that want the same pages load each once, and a checkpoint's
// write-back beside them (write_back_beside) writes every change; with a pool too small for
// their pages, the misses evict beside them and nothing is lost (run under ThreadSanitizer
// too).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

#include "common/page_format.hpp"
#include "tests/test_support.hpp"
#include "tests/tiers_pattern_pages.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"
#include "tiers/resident_writes.hpp"

namespace tristore {
namespace {

using testing::Architecture;
using testing::kArchitectures;
using testing::pattern;
using testing::TestTiers;
using Location = BufferManager::Location;

BufferManagerOptions options_for(const Architecture& arch, TestTiers& tiers, std::size_t slabs) {
  BufferManagerOptions options;
  options.dram_bytes = slabs * FramePool::kSlabBytes;
  options.nvm = arch.nvm ? tiers.nvm.get() : nullptr;
  options.ssd = arch.ssd ? tiers.ssd.get() : nullptr;
  options.cache_line_grained = arch.cache_line_grained;
  options.mini_pages = arch.mini_pages;
  options.swizzling = arch.swizzling;
  return options;
}

TestTiers tiers_for(const Architecture& arch, const char* tag) {
  return TestTiers(tag, arch.nvm ? 64 : 0, arch.ssd ? 128 : 0);
}

class ChangerMisses : public ::testing::TestWithParam<Architecture> {};

// Every architecture: the page comes into a free frame beside the changes, its bytes right,
// nothing evicted, and its swip swizzled where the architecture swizzles.
TEST_P(ChangerMisses, APageNotInDramIsLoadedIntoAFreeFrame) {
  const Architecture& arch = GetParam();
  TestTiers tiers = tiers_for(arch, "changer-miss");
  BufferManager bm(options_for(arch, tiers, 8));
  Swip root = testing::pattern_pages_written_down(bm, 1)[0];
  const PageId page_id = root.page_id();
  ASSERT_EQ(bm.location(page_id), arch.nvm ? Location::kNvm : Location::kSsd);
  const Counters before = bm.counters();
  {
    ResidentWrites writes(bm);
    ResidentWrites::Guard page = writes.fix(root, nullptr);
    EXPECT_EQ(*page.read(777, 1), pattern(777));
    EXPECT_EQ(*page.read(9000, 1), pattern(9000));
    EXPECT_FALSE(writes.needs_loading());
  }
  const Counters during = bm.counters() - before;
  EXPECT_EQ(during.changer_misses, 1u);
  EXPECT_EQ(during.dram_evictions, 0u);
  EXPECT_EQ(root.is_swizzled(), arch.swizzling);
  EXPECT_NE(bm.location(page_id), arch.nvm ? Location::kNvm : Location::kSsd);
  // The next fix finds it in DRAM: no miss.
  {
    ResidentWrites writes(bm);
    EXPECT_EQ(*writes.fix(root, nullptr).read(777, 1), pattern(777));
  }
  EXPECT_EQ((bm.counters() - before).changer_misses, 1u);
  bm.flush_all();
}

// A full pool, without the changes' slots (BufferManager::change_beside): nothing is evicted
// beside changes, the page stays where it is, and the change is told that loading was all it
// missed.
TEST_P(ChangerMisses, WithNoFrameFreeNothingIsEvictedAndTheChangeIsToldToLoad) {
  const Architecture& arch = GetParam();
  TestTiers tiers = tiers_for(arch, "changer-full");
  constexpr std::size_t kSlabs = 8;
  BufferManager bm(options_for(arch, tiers, kSlabs));
  Swip root = testing::pattern_pages_written_down(bm, 1)[0];
  for (std::size_t i = 0; i < kSlabs; ++i) bm.allocate_page();  // each a whole slab
  const Location where = bm.location(root.page_id());
  const Counters before = bm.counters();
  {
    ResidentWrites writes(bm);
    EXPECT_THROW(writes.fix(root, nullptr), ResidentWrites::RetryExclusively);
    EXPECT_TRUE(writes.needs_loading());
  }
  const Counters during = bm.counters() - before;
  EXPECT_EQ(during.dram_evictions, 0u);
  EXPECT_EQ(during.changer_misses, 1u);
  EXPECT_FALSE(root.is_swizzled());
  EXPECT_EQ(bm.location(root.page_id()), where);
  // Exclusively, the fix evicts and loads.
  EXPECT_EQ(*bm.fix(root, nullptr).read(777, 1), pattern(777));
  bm.flush_all();
}

// With the changes' slots: a full pool, and the miss evicts ahead beside the changes (not the
// frame a change holds latched), each victim written down; the frames it let go come back
// once the change inside has left, and the next change finds one free.
TEST_P(ChangerMisses, WithTheChangesSlotsAMissEvictsAheadAndALaterChangeFindsAFrame) {
  const Architecture& arch = GetParam();
  TestTiers tiers = tiers_for(arch, "changer-evicts");
  constexpr std::size_t kSlabs = 8;
  BufferManager bm(options_for(arch, tiers, kSlabs));
  ReaderSlots changers;
  bm.change_beside(&changers);
  Swip root = testing::pattern_pages_written_down(bm, 1)[0];
  // A full pool of dirty pages, each a whole slab, byte 5000 of page i holding i + 1.
  std::vector<Swip> filled;
  filled.reserve(kSlabs);  // root swips, swizzled where they stay
  std::vector<PageId> filled_ids;
  for (std::size_t i = 0; i < kSlabs; ++i) {
    BufferManager::Guard page = bm.allocate_page();
    *page.write(5000, 1) = std::byte(i + 1);
    filled.push_back(bm.swip_of(page));
    filled_ids.push_back(page.page_id());
  }
  const Counters before = bm.counters();
  {
    changers.enter();  // one change: it holds page 0 latched, then misses
    ResidentWrites writes(bm);
    ResidentWrites::Guard held = writes.fix(filled[0], nullptr);
    writes.latch_leaf(held, true);
    EXPECT_THROW(writes.fix(root, nullptr), ResidentWrites::RetryExclusively);
    EXPECT_TRUE(writes.needs_loading());
    held.release();
    changers.leave();
  }
  const Counters during = bm.counters() - before;
  EXPECT_GE(during.dram_evictions, kSlabs - 1) << "every page but the one held";
  EXPECT_EQ(bm.location(filled_ids[0]), Location::kDramFull) << "the held page stays";
  for (std::size_t i = 1; i < kSlabs; ++i)
    EXPECT_NE(bm.location(filled_ids[i]), Location::kDramFull) << "page " << i;
  {
    changers.enter();  // the next change: the frames let go have come back
    ResidentWrites writes(bm);
    EXPECT_EQ(*writes.fix(root, nullptr).read(777, 1), pattern(777));
    EXPECT_FALSE(writes.needs_loading());
    changers.leave();
  }
  // The held page's swip swizzled, then the page's miss twice.
  EXPECT_EQ((bm.counters() - before).changer_misses, arch.swizzling ? 3u : 2u);
  EXPECT_EQ(root.is_swizzled(), arch.swizzling);
  // The evicted pages were written down whole.
  for (std::size_t i = 0; i < kSlabs; ++i)
    EXPECT_EQ(*bm.fix(filled[i], nullptr).read(5000, 1), std::byte(i + 1)) << "page " << i;
  bm.flush_all();
}

INSTANTIATE_TEST_SUITE_P(Architectures, ChangerMisses, ::testing::ValuesIn(kArchitectures),
                         testing::ParamName{});

// After a flush, page p holds its pattern but for the bytes changed(p, expected) sets.
template <typename Changed>
void expect_pages_hold(BufferManager& bm, std::vector<Swip>& roots, std::uint64_t seed,
                       Changed&& changed) {
  bm.flush_all();
  for (std::size_t p = 0; p < roots.size(); ++p) {
    std::vector<std::byte> expected(kPageSize);
    for (std::size_t i = 0; i < kPageSize; ++i) expected[i] = pattern(i, p);
    changed(p, expected);
    BufferManager::Guard page = bm.fix(roots[p], nullptr);
    const std::byte* bytes = page.whole_page();
    for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i)
      ASSERT_EQ(bytes[i], expected[i]) << "page " << p << " byte " << i << " seed " << seed;
  }
  bm.flush_all();
}

// Threads changing pages that start in NVM while one thread runs checkpoints' write-backs
// beside them. Thread t owns kPairs pairs of lines in every page and writes either the last
// byte of a pair's first line or that byte and the first of its second line (a run across
// the two): so mini pages fill, runs find one line of two (the mini page is sorted into a
// copy) and pages outgrow their mini page (promoted), all beside the changes, the change
// moving with the page. Each page is loaded once; a change that finds its frame let go under
// it runs again; each read sees the thread's last write; after a flush every page holds each
// thread's last writes and its pattern elsewhere.
TEST(ChangerMissesThreads, PagesMoveUnderChangesAndCheckpointsBesideWriteEveryChange) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr std::size_t kPages = 48;
  constexpr unsigned kChangers = 5;
  constexpr std::size_t kPairs = 3;
  constexpr int kChanges = 20000;
  constexpr std::uint32_t kFirstLine = 40;
  // The byte that ends pair j of thread t (the run's first byte); the next byte begins its
  // second line.
  auto pair_at = [](unsigned t, std::size_t j) {
    return static_cast<std::uint32_t>((kFirstLine + 2 * (t + kChangers * j)) * kCacheLineSize +
                                      kCacheLineSize - 1);
  };
  TestTiers tiers("changer-threads", 128, 256);
  // Room for a full frame and every copy of every page: nothing runs out of frames.
  BufferManager bm(options_for(kArchitectures[0], tiers, 128));
  std::vector<Swip> roots = testing::pattern_pages_written_down(bm, kPages);
  const Counters before = bm.counters();
  // written[t][p][j]: the two bytes of the pair as thread t last left them.
  using Pairs = std::array<std::array<std::byte, 2>, kPairs>;
  std::vector<std::vector<Pairs>> written(kChangers, std::vector<Pairs>(kPages));
  for (unsigned t = 0; t < kChangers; ++t)
    for (std::size_t p = 0; p < kPages; ++p)
      for (std::size_t j = 0; j < kPairs; ++j)
        written[t][p][j] = {pattern(pair_at(t, j), p), pattern(pair_at(t, j) + 1, p)};
  std::atomic<bool> changing{true};
  std::atomic<int> wrong{0};
  std::atomic<std::uint64_t> write_backs{0}, let_go{0};
  std::thread checkpointer([&] {
    while (changing.load(std::memory_order_relaxed)) {
      bm.begin_write_back_round();
      while (!bm.write_back_beside(8)) {
      }
      write_backs.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::vector<std::thread> changers;
  for (unsigned t = 0; t < kChangers; ++t) {
    changers.emplace_back([&, t] {
      std::mt19937_64 random(seed * 31 + t);
      for (int i = 0; i < kChanges; ++i) {
        const std::size_t p = random() % kPages;
        const std::size_t j = random() % kPairs;
        const std::uint32_t length = 1 + static_cast<std::uint32_t>(random() % 2);
        const auto value = static_cast<std::uint8_t>(random());
        const std::uint32_t at = pair_at(t, j);
        for (;;) {
          try {
            ResidentWrites writes(bm);
            ResidentWrites::Guard page = writes.fix(roots[p], nullptr);
            writes.latch_leaf(page, true);
            const std::array<ByteRange, 1> runs{{{at, length}}};
            page.claim_writes(runs);
            const std::byte* seen = page.read(at, length);
            for (std::uint32_t b = 0; b < length; ++b)
              if (seen[b] != written[t][p][j][b]) wrong.fetch_add(1, std::memory_order_relaxed);
            std::byte* bytes = page.write(at, length);
            for (std::uint32_t b = 0; b < length; ++b) bytes[b] = std::byte{value};
            break;
          } catch (const ResidentWrites::RetryExclusively&) {
            let_go.fetch_add(1, std::memory_order_relaxed);  // nothing written: again
          }
        }
        for (std::uint32_t b = 0; b < length; ++b) written[t][p][j][b] = std::byte{value};
      }
    });
  }
  for (std::thread& changer : changers) changer.join();
  changing = false;
  checkpointer.join();
  const Counters during = bm.counters() - before;
  std::printf(
      "seed %llu: misses beside changes %llu, copies %llu, promotions %llu, frames let go under "
      "a change %llu, write-back rounds %llu\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(during.changer_misses),
      static_cast<unsigned long long>(during.mini_page_copies),
      static_cast<unsigned long long>(during.mini_page_promotions),
      static_cast<unsigned long long>(let_go.load()),
      static_cast<unsigned long long>(write_backs.load()));
  EXPECT_EQ(wrong.load(), 0) << "seed " << seed;
  EXPECT_EQ(during.mini_pages_created, kPages) << "each page loaded once";
  EXPECT_EQ(during.dram_evictions, 0u);
  EXPECT_GT(during.mini_page_copies, 0u);
  EXPECT_EQ(during.mini_page_promotions, kPages) << "every page outgrew its mini page";
  for (const Swip& root : roots) EXPECT_TRUE(Swip::load(root).is_swizzled());
  expect_pages_hold(bm, roots, seed, [&](std::size_t p, std::vector<std::byte>& expected) {
    for (unsigned t = 0; t < kChangers; ++t)
      for (std::size_t j = 0; j < kPairs; ++j)
        for (std::uint32_t b = 0; b < 2; ++b) expected[pair_at(t, j) + b] = written[t][p][j][b];
  });
}

// Threads changing more pages than the pool holds, each change inside the changes' slots:
// their misses evict beside them (each victim latched first, written down) and load the pages
// again, while a checkpoint's write-back runs beside them too. A change that finds its frame
// let go, or no frame free yet, runs again beside the others (the frames let go come back as
// the changes inside then leave). Each read sees the thread's last write; after a flush every
// page holds each thread's last writes and its pattern elsewhere. 3tier, and basic-nvm, whose
// misses copy pages whole from NVM outside the miss latch (tiers/page_loads.cpp).
class ChangerMissesThreadsEvicting : public ::testing::TestWithParam<Architecture> {};

TEST_P(ChangerMissesThreadsEvicting, MissesEvictBesideChangesAndLoseNoChange) {
  const Architecture& arch = GetParam();
  const std::uint64_t seed = testing_support::test_seed();
  constexpr std::size_t kPages = 64;
  constexpr unsigned kChangers = 5;
  constexpr int kChanges = 10000;
  TestTiers tiers("changer-evict-threads", 128, arch.ssd ? 256 : 0);
  // 8 slabs for 64 pages that outgrow their mini pages (or are full frames): most misses
  // evict.
  BufferManager bm(options_for(arch, tiers, 8));
  ReaderSlots changes;
  bm.change_beside(&changes);
  std::vector<Swip> roots = testing::pattern_pages_written_down(bm, kPages);
  const Counters before = bm.counters();
  // Thread t owns a byte in each of four lines of every page (20 lines in all: pages outgrow
  // their mini pages): written[t][p][i].
  constexpr std::size_t kLinesEach = 4;
  auto byte_at = [](unsigned t, std::size_t i) {
    return static_cast<std::uint32_t>((100 + kLinesEach * t + i) * kCacheLineSize + 7);
  };
  using Bytes = std::array<std::byte, kLinesEach>;
  std::vector<std::vector<Bytes>> written(kChangers, std::vector<Bytes>(kPages));
  for (unsigned t = 0; t < kChangers; ++t)
    for (std::size_t p = 0; p < kPages; ++p)
      for (std::size_t i = 0; i < kLinesEach; ++i) written[t][p][i] = pattern(byte_at(t, i), p);
  std::atomic<bool> changing{true};
  std::atomic<int> wrong{0};
  std::atomic<std::uint64_t> retries{0};
  std::thread checkpointer([&] {
    while (changing.load(std::memory_order_relaxed)) {
      changes.enter();
      bm.begin_write_back_round();
      while (!bm.write_back_beside(8)) {
      }
      changes.leave();
    }
  });
  std::vector<std::thread> changers;
  for (unsigned t = 0; t < kChangers; ++t) {
    changers.emplace_back([&, t] {
      std::mt19937_64 random(seed * 31 + t);
      for (int c = 0; c < kChanges; ++c) {
        const std::size_t p = random() % kPages;
        const std::size_t i = random() % kLinesEach;
        const auto value = static_cast<std::uint8_t>(random());
        const std::uint32_t at = byte_at(t, i);
        for (;;) {
          changes.enter();
          try {
            ResidentWrites writes(bm);
            ResidentWrites::Guard page = writes.fix(roots[p], nullptr);
            writes.latch_leaf(page, true);
            const std::array<ByteRange, 1> runs{{{at, 1}}};
            page.claim_writes(runs);
            if (*page.read(at, 1) != written[t][p][i])
              wrong.fetch_add(1, std::memory_order_relaxed);
            *page.write(at, 1) = std::byte{value};
            page.release();
            changes.leave();
            break;
          } catch (const ResidentWrites::RetryExclusively&) {
            retries.fetch_add(1, std::memory_order_relaxed);  // nothing written: again
          }
          changes.leave();
          std::this_thread::yield();
        }
        written[t][p][i] = std::byte{value};
      }
    });
  }
  for (std::thread& changer : changers) changer.join();
  changing = false;
  checkpointer.join();
  const Counters during = bm.counters() - before;
  std::printf(
      "seed %llu: misses beside changes %llu, evictions %llu, promotions %llu, tries again "
      "%llu\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(during.changer_misses),
      static_cast<unsigned long long>(during.dram_evictions),
      static_cast<unsigned long long>(during.mini_page_promotions),
      static_cast<unsigned long long>(retries.load()));
  EXPECT_EQ(wrong.load(), 0) << "seed " << seed;
  EXPECT_GT(during.dram_evictions, kPages) << "the pages went round the pool";
  expect_pages_hold(bm, roots, seed, [&](std::size_t p, std::vector<std::byte>& expected) {
    for (unsigned t = 0; t < kChangers; ++t)
      for (std::size_t i = 0; i < kLinesEach; ++i) expected[byte_at(t, i)] = written[t][p][i];
  });
}

static_assert(std::string_view(kArchitectures[4].name) == "basic_nvm");
INSTANTIATE_TEST_SUITE_P(ThreeTierAndBasicNvm, ChangerMissesThreadsEvicting,
                         ::testing::Values(kArchitectures[0], kArchitectures[4]),
                         testing::ParamName{});

}  // namespace
}  // namespace tristore
