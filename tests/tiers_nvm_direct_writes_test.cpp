// NvmDirectWrites (tiers/nvm_direct_writes.hpp): nvm-direct's leaf changes side by side. A page
// not checked since open is left to the exclusive latch (its check must not race a change);
// threads changing one leaf each hold its latch until their lines are written back, so no
// change is lost and a reader under the shared latch never sees half of one; the device counts
// every thread's lines (run under ThreadSanitizer too).
#include "tiers/nvm_direct_writes.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "nvm/nvm_tier.hpp"
#include "tests/test_support.hpp"
#include "tiers/nvm_direct_access.hpp"

namespace tristore {
namespace {

using testing_support::TempDir;

constexpr std::uint64_t kFileBytes = 4 << 20;
// Two words a change keeps equal, on different lines of the page.
constexpr std::uint32_t kFirst = 1024;
constexpr std::uint32_t kSecond = 9000;

class NvmDirectWritesTest : public ::testing::Test {
 protected:
  NvmDirectWritesTest() : dir_(testing_support::kNvmBase, "tristore-nvm-direct-writes") {}

  std::unique_ptr<NvmTier> open_tier(bool create) {
    NvmTierOptions options;
    options.device.path = dir_.file("tier.nvm");
    options.device.size_bytes = create ? kFileBytes : 0;
    options.device.create = create;
    options.log_bytes = 256 << 10;
    return create ? NvmTier::create(options) : NvmTier::open(options);
  }
  // A zeroed page, persisted.
  static Swip new_page(NvmDirectAccess& direct) {
    NvmDirectAccess::Guard page = direct.allocate_page();
    return direct.swip_of(page);
  }
  static std::uint64_t word(NvmDirectWrites::Guard& page, std::uint32_t offset) {
    std::uint64_t value;
    std::memcpy(&value, page.read(offset, sizeof(value)), sizeof(value));
    return value;
  }

  TempDir dir_;
};

TEST_F(NvmDirectWritesTest, APageNotCheckedSinceOpenIsTheExclusiveLatchsToFix) {
  Swip swip;
  {
    auto tier = open_tier(true);
    NvmDirectAccess direct(*tier);
    swip = new_page(direct);
    tier->seal_pages();  // its checksum, to be checked at the first fix after the reopen
  }
  auto tier = open_tier(false);
  NvmDirectAccess direct(*tier);
  NvmDirectWrites writes(direct);
  ASSERT_FALSE(tier->content_checked(static_cast<SlotId>(swip.page_id())));
  EXPECT_THROW(writes.fix(swip, nullptr), NvmDirectWrites::RetryExclusively);
  { NvmDirectAccess::Guard checked = direct.fix(swip, nullptr); }  // the exclusive way
  EXPECT_TRUE(tier->content_checked(static_cast<SlotId>(swip.page_id())));
  NvmDirectWrites::Guard page = writes.fix(swip, nullptr);
  EXPECT_EQ(page.page_id(), swip.page_id());
}

TEST_F(NvmDirectWritesTest, ThreadsChangingOneLeafLoseNoChangeAndReadersSeeNoneHalfDone) {
  const unsigned kWriters = 6, kReaders = 2;
  const std::uint64_t kChanges = 2000;
  auto tier = open_tier(true);
  NvmDirectAccess direct(*tier);
  Swip swip = new_page(direct);
  const std::uint64_t written_before = tier->device().counters().nvm_lines_written;
  std::atomic<bool> torn{false};
  std::atomic<unsigned> writing{kWriters};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kWriters; ++t) {
    threads.emplace_back([&] {
      NvmDirectWrites writes(direct);
      for (std::uint64_t i = 0; i < kChanges; ++i) {
        NvmDirectWrites::Guard page = writes.fix(swip, nullptr);
        writes.latch_leaf(page, true);
        const std::uint64_t next = word(page, kFirst) + 1;
        std::memcpy(page.write(kFirst, sizeof(next)), &next, sizeof(next));
        std::this_thread::yield();  // let the others try the latch in the middle of a change
        std::memcpy(page.write(kSecond, sizeof(next)), &next, sizeof(next));
      }
      writing.fetch_sub(1);
    });
  }
  for (unsigned t = 0; t < kReaders; ++t) {
    threads.emplace_back([&] {
      NvmDirectWrites reads(direct);
      while (writing.load() != 0) {
        NvmDirectWrites::Guard page = reads.fix(swip, nullptr);
        reads.latch_leaf(page, false);
        if (word(page, kFirst) != word(page, kSecond)) torn = true;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  NvmDirectWrites writes(direct);
  NvmDirectWrites::Guard page = writes.fix(swip, nullptr);
  writes.latch_leaf(page, false);
  EXPECT_EQ(word(page, kFirst), kWriters * kChanges) << "changes were lost";
  EXPECT_EQ(word(page, kSecond), kWriters * kChanges);
  EXPECT_FALSE(torn) << "a reader saw half a change";
  // Each change wrote back its two lines, each thread's counted.
  EXPECT_EQ(tier->device().counters().nvm_lines_written - written_before, 2 * kWriters * kChanges);
}

}  // namespace
}  // namespace tristore
