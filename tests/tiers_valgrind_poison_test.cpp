// Debug mode for valgrind (TRISTORE_VALGRIND): a read of a cache line that was never made
// resident is reported by memcheck, on a mini page and on a full frame. The test counts
// memcheck's errors around each deliberate bad read (VALGRIND_COUNT_ERRORS), so it fails when
// the poisoning is off: anonymous DRAM is readable, and without the client requests the read
// goes unnoticed. tests/valgrind_memcheck.sh runs it under valgrind; run directly, it skips.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define TRISTORE_TEST_HAS_MEMCHECK 1
#endif

namespace tristore {
namespace {

#if defined(TRISTORE_TEST_HAS_MEMCHECK)

using Guard = BufferManager::Guard;

volatile std::byte read_sink;

class TiersValgrindPoison : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RUNNING_ON_VALGRIND == 0) GTEST_SKIP() << "run under valgrind (tests/valgrind_memcheck.sh)";
  }
  // A page written and flushed to NVM, then fixed again: only the lines read come back.
  Guard cold_page(BufferManager& bm, Swip& root) {
    {
      Guard page = bm.allocate_page();
      root = bm.swip_of(page);
      std::memset(page.whole_page() + 64, 0x5A, kPageSize - 64);
      page.mark_dirty(64, kPageSize - 64);
    }
    bm.flush_all();
    return bm.fix(root, nullptr);
  }
  // How many errors memcheck reports for one read of the byte at `p`. The byte is stored to a
  // volatile sink: valgrind's JIT drops a load whose value is unused, and its check with it.
  static unsigned errors_reading(const std::byte* p) {
    const unsigned before = VALGRIND_COUNT_ERRORS;
    read_sink = *p;
    return VALGRIND_COUNT_ERRORS - before;
  }
  testing::TestTiers tiers{"valgrind-poison", 4, 16};
};

TEST_F(TiersValgrindPoison, ReadingPastTheResidentLineOfAMiniPageIsReported) {
  BufferManagerOptions options{
      .dram_bytes = 8 * FramePool::kSlabBytes, .nvm = tiers.nvm.get(), .ssd = tiers.ssd.get()};
  BufferManager bm(options);
  Swip root;
  Guard page = cold_page(bm, root);
  ASSERT_TRUE(page.on_mini_page());
  const std::byte* line = page.read(5 * 64, 64);
  EXPECT_EQ(errors_reading(line), 0u);  // the resident line is fine
  EXPECT_EQ(errors_reading(line + 64), 1u) << "the unused slot after it must be no-access";
}

TEST_F(TiersValgrindPoison, ReadingANonResidentLineOfAFullFrameIsReported) {
  BufferManagerOptions options{.dram_bytes = 8 * FramePool::kSlabBytes,
                               .nvm = tiers.nvm.get(),
                               .ssd = tiers.ssd.get(),
                               .mini_pages = false};
  BufferManager bm(options);
  Swip root;
  Guard page = cold_page(bm, root);
  ASSERT_FALSE(page.on_mini_page());
  const std::byte* line = page.read(5 * 64, 64);
  EXPECT_EQ(errors_reading(line), 0u);
  EXPECT_EQ(errors_reading(line + 2 * 64), 1u) << "line 7 was never loaded";
  EXPECT_EQ(errors_reading(line - 64), 1u) << "line 4 was never loaded";
}

#else

TEST(TiersValgrindPoison, NeedsValgrindHeaders) {
  GTEST_SKIP() << "valgrind/memcheck.h is missing (apt-get install valgrind)";
}

#endif

}  // namespace
}  // namespace tristore
