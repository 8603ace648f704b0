// BufferManager::fix_beside_changes (tiers/changer_misses.cpp), reached through ResidentWrites
// (tiers/resident_writes.hpp): a change beside others that finds a page not in DRAM loads it
// into a free frame under the miss latch (from NVM, or read from SSD outside it) and swizzles
// its swip, while the other changes go on; with no frame free it evicts nothing and is told
// to bring the page in another way (RetryExclusively, needs_loading). Threads that want the
// same pages load each once, and a checkpoint's write-back beside them (write_back_beside)
// writes every change (run under ThreadSanitizer too).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <random>
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

// A full pool: nothing is evicted beside changes, the page stays where it is, and the change
// is told that loading was all it missed.
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

INSTANTIATE_TEST_SUITE_P(Architectures, ChangerMisses, ::testing::ValuesIn(kArchitectures),
                         [](const ::testing::TestParamInfo<Architecture>& info) {
                           return std::string(info.param.name);
                         });

// Threads changing pages that start in NVM, each its own line of every page, in random order,
// while one thread runs checkpoints' write-backs beside them: each page is loaded once (one
// mini page each), every swip ends swizzled, each read sees the thread's last write, and after
// a flush every page holds every thread's last write and its pattern elsewhere.
TEST(ChangerMissesThreads, ThreadsLoadEachPageOnceAndCheckpointsBesideWriteEveryChange) {
  const std::uint64_t seed = testing_support::test_seed();
  constexpr std::size_t kPages = 48;
  constexpr unsigned kChangers = 5;
  constexpr int kChanges = 20000;
  constexpr std::uint32_t kFirstLine = 40;  // thread t's byte: the first of line kFirstLine + t
  TestTiers tiers("changer-threads", 128, 256);
  BufferManager bm(options_for(kArchitectures[0], tiers, 8));
  std::vector<Swip> roots = testing::pattern_pages_written_down(bm, kPages);
  const Counters before = bm.counters();
  // last[t][p]: the value thread t last wrote to page p (0: none yet).
  std::vector<std::array<std::uint8_t, kPages>> last(kChangers);
  std::atomic<bool> changing{true};
  std::atomic<int> wrong{0};
  std::atomic<std::uint64_t> write_backs{0};
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
      const std::uint32_t at = (kFirstLine + t) * kCacheLineSize;
      for (int i = 0; i < kChanges; ++i) {
        const std::size_t p = random() % kPages;
        const auto value = static_cast<std::uint8_t>(1 + random() % 255);
        ResidentWrites writes(bm);
        ResidentWrites::Guard page = writes.fix(roots[p], nullptr);
        writes.latch_leaf(page, true);
        const std::array<ByteRange, 1> runs{{{at, 1}}};
        page.claim_writes(runs);
        const std::byte seen = *page.read(at, 1);
        const std::byte expected = last[t][p] == 0 ? pattern(at, p) : std::byte{last[t][p]};
        if (seen != expected) wrong.fetch_add(1, std::memory_order_relaxed);
        *page.write(at, 1) = std::byte{value};
        last[t][p] = value;
      }
    });
  }
  for (std::thread& changer : changers) changer.join();
  changing = false;
  checkpointer.join();
  const Counters during = bm.counters() - before;
  std::printf("seed %llu: pages loaded beside changes %llu, write-back rounds %llu\n",
              static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(during.changer_misses),
              static_cast<unsigned long long>(write_backs.load()));
  EXPECT_EQ(wrong.load(), 0) << "seed " << seed;
  EXPECT_EQ(during.mini_pages_created, kPages) << "each page loaded once";
  EXPECT_EQ(during.dram_evictions, 0u);
  EXPECT_GE(during.changer_misses, kPages);
  for (const Swip& root : roots) EXPECT_TRUE(Swip::load(root).is_swizzled());
  bm.flush_all();
  for (std::size_t p = 0; p < kPages; ++p) {
    BufferManager::Guard page = bm.fix(roots[p], nullptr);
    const std::byte* bytes = page.whole_page();
    for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i) {
      const std::size_t line = i / kCacheLineSize;
      std::byte expected = pattern(i, p);
      if (line >= kFirstLine && line < kFirstLine + kChangers && i % kCacheLineSize == 0 &&
          last[line - kFirstLine][p] != 0)
        expected = std::byte{last[line - kFirstLine][p]};
      ASSERT_EQ(bytes[i], expected) << "page " << p << " byte " << i << " seed " << seed;
    }
  }
  bm.flush_all();
}

}  // namespace
}  // namespace tristore
