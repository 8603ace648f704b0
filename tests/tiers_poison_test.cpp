// Debug mode (TRISTORE_POISON): a read of a cache line that was never made resident is
// reported by AddressSanitizer at the faulting line, on a mini page and on a full frame.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

#if defined(TRISTORE_POISON)

using Guard = BufferManager::Guard;

// A page written and flushed to NVM, then fixed again: only the lines read come back.
class TiersPoisonDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style,
                   "fast");  // the child inherits the files; the parent removes them
  }
  BufferManager::Guard cold_page(BufferManager& bm, Swip& root) {
    {
      Guard page = bm.allocate_page();
      root = bm.swip_of(page);
      std::memset(page.whole_page() + 64, 0x5A, kPageSize - 64);
      page.mark_dirty(64, kPageSize - 64);
    }
    bm.flush_all();
    return bm.fix(root, nullptr);
  }
  testing::TestTiers tiers{"poison", 4, 16};
};

std::byte read_byte(const std::byte* p) { return *static_cast<const volatile std::byte*>(p); }

TEST_F(TiersPoisonDeathTest, ReadingPastTheResidentLineOfAMiniPageIsReported) {
  BufferManagerOptions options{
      .dram_bytes = 8 * FramePool::kSlabBytes, .nvm = tiers.nvm.get(), .ssd = tiers.ssd.get()};
  BufferManager bm(options);
  Swip root;
  Guard page = cold_page(bm, root);
  ASSERT_TRUE(page.on_mini_page());
  const std::byte* line = page.read(5 * 64, 64);
  EXPECT_EQ(read_byte(line), std::byte{0x5A});  // the resident line is fine
  EXPECT_DEATH(read_byte(line + 64), "use-after-poison");
}

TEST_F(TiersPoisonDeathTest, ReadingANonResidentLineOfAFullFrameIsReported) {
  BufferManagerOptions options{.dram_bytes = 8 * FramePool::kSlabBytes,
                               .nvm = tiers.nvm.get(),
                               .ssd = tiers.ssd.get(),
                               .mini_pages = false};
  BufferManager bm(options);
  Swip root;
  Guard page = cold_page(bm, root);
  const std::byte* line = page.read(5 * 64, 64);
  EXPECT_EQ(read_byte(line), std::byte{0x5A});
  EXPECT_DEATH(read_byte(line + 2 * 64), "use-after-poison");
  EXPECT_DEATH(read_byte(line - 64), "use-after-poison");
}

#else

TEST(TiersPoison, NeedsAPoisonBuild) {
  GTEST_SKIP()
      << "configure with -DTRISTORE_POISON=ON to check that non-resident lines are poisoned";
}

#endif

}  // namespace
}  // namespace tristore
