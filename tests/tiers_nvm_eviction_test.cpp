// NVM eviction (transition 6): a page's NVM copy stays until its SSD copy is durable, the SSD
// writes of a batch of victims share one sync, and victims are never pages in DRAM.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "nvm/nvm_tier.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tests/test_support.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

using Guard = BufferManager::Guard;
using testing_support::TempDir;
using testing_support::test_seed;

constexpr std::uint64_t kLogBytes = 4096;
constexpr std::uint64_t kSsdPages = 128;

// Bytes [32, 16 KiB) of page `id`, in version `version`.
std::byte pattern(PageId id, std::uint32_t version, std::size_t i) {
  return std::byte(static_cast<std::uint8_t>(id * 31 + version * 7 + i));
}
void fill(Guard& guard, std::uint32_t version) {
  std::byte* page = guard.whole_page();
  for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i)
    page[i] = pattern(guard.page_id(), version, i);
  guard.mark_dirty(kPageHeaderSize, kPageSize - kPageHeaderSize);
}
bool holds(Guard& guard, std::uint32_t version) {
  const std::byte* page = guard.whole_page();
  for (std::size_t i = kPageHeaderSize; i < kPageSize; ++i)
    if (page[i] != pattern(guard.page_id(), version, i)) return false;
  return true;
}

class TiersNvmEvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');  // parameterised tests
    nvm_path_ = "/dev/shm/tristore-test-" + std::to_string(::getpid()) + "-" + name + ".nvm";
    nvm_image_path_ = nvm_path_ + ".crash";
  }
  void TearDown() override {
    bm_.reset();
    nvm_.reset();
    ssd_.reset();
    std::remove(nvm_path_.c_str());
    std::remove(nvm_image_path_.c_str());
  }

  // Fresh files: NVM of `slots` slots (with the crash simulator), SSD of kSsdPages pages.
  void create(std::uint64_t slots, std::uint32_t eviction_batch = 0) {
    bm_.reset();
    nvm_.reset();
    ssd_.reset();
    NvmTierOptions nvm;
    nvm.device.path = nvm_path_;
    nvm.device.size_bytes = NvmLayout::compute(slots, kLogBytes).end;
    nvm.device.crash_simulation = true;
    nvm.log_bytes = kLogBytes;
    nvm.database_id = 5;
    nvm_ = NvmTier::create(nvm);
    SsdOptions ssd;
    ssd.path = ssd_path();
    ssd.create = true;
    ssd.size_bytes = (kSsdPages + 3) * kPageSize;
    ssd.database_id = 5;
    ssd_ = SsdPageFile::create(ssd);
    bm_ = std::make_unique<BufferManager>(options(eviction_batch));
  }
  BufferManagerOptions options(std::uint32_t eviction_batch) {
    BufferManagerOptions o;
    o.dram_bytes = 8 * FramePool::kSlabBytes;
    o.nvm = nvm_.get();
    o.ssd = ssd_.get();
    o.nvm_eviction_batch = eviction_batch;
    return o;
  }
  std::string ssd_path() const { return (dir_.path / "pages.ssd").string(); }
  std::string durable_ssd_path() const { return (dir_.path / "durable.ssd").string(); }
  std::string reopened_ssd_path() const { return (dir_.path / "reopened.ssd").string(); }

  // The SSD file as a power failure now would leave it, taken right after a sync.
  void remember_durable_ssd() {
    std::filesystem::copy_file(ssd_path(), durable_ssd_path(),
                               std::filesystem::copy_options::overwrite_existing);
  }

  std::vector<PageId> allocate_pages(std::size_t count, std::uint32_t version) {
    std::vector<PageId> ids;
    for (std::size_t i = 0; i < count; ++i) {
      Guard page = bm_->allocate_page();
      fill(page, version);
      ids.push_back(page.page_id());
    }
    return ids;
  }

  // Pages of `ids` missing or wrong after a power failure now: NVM from the crash image of
  // `seed`, SSD as of its last sync.
  std::vector<PageId> pages_lost_after_power_failure(const std::vector<PageId>& ids,
                                                     std::uint32_t version, std::uint64_t seed) {
    nvm_->device().crash_simulator()->write_crash_image(seed, nvm_image_path_);
    std::filesystem::copy_file(durable_ssd_path(), reopened_ssd_path(),
                               std::filesystem::copy_options::overwrite_existing);
    NvmTierOptions nvm;
    nvm.device.path = nvm_image_path_;
    nvm.log_bytes = kLogBytes;
    SsdOptions ssd;
    ssd.path = reopened_ssd_path();
    auto nvm_tier = NvmTier::open(nvm);
    auto ssd_file = SsdPageFile::open(ssd);
    BufferManagerOptions o;
    o.dram_bytes = 8 * FramePool::kSlabBytes;
    o.nvm = nvm_tier.get();
    o.ssd = ssd_file.get();
    BufferManager bm(o);
    std::vector<PageId> lost;
    for (PageId id : ids) {
      try {
        Guard page = bm.fix_page(id);
        if (!holds(page, version)) lost.push_back(id);
      } catch (const Error&) {  // a page never written to SSD fails its checksum
        lost.push_back(id);
      }
    }
    return lost;
  }

  TempDir dir_;
  std::string nvm_path_, nvm_image_path_;
  std::unique_ptr<NvmTier> nvm_;
  std::unique_ptr<SsdPageFile> ssd_;
  std::unique_ptr<BufferManager> bm_;
};

TEST_F(TiersNvmEvictionTest, PowerFailureAtAnyFenceOfNvmEvictionLosesNoPage) {
  // Pages whose only durable copy is in NVM (dirty vs SSD) are evicted one by one; the power
  // fails at the n-th NVM fence, for every n. The SSD keeps only what was synced: its file as
  // of the last sync (a step that synced before the crash counts as synced; eviction writes
  // SSD only before its sync). The old code freed the slot right after an unsynced SSD write.
  constexpr std::uint64_t kSlots = 8;
  const std::uint64_t base_seed = test_seed();
  std::uint64_t crashes = 0;
  for (std::uint64_t n = 1;; ++n) {
    SCOPED_TRACE("crash at fence " + std::to_string(n));
    // 1. kSlots new pages, admitted to free NVM slots; the SSD holds their ids, not their bytes.
    create(kSlots);
    const std::vector<PageId> ids = allocate_pages(kSlots, 1);
    bm_->flush_all();
    ASSERT_EQ(nvm_->slots_in_use(), kSlots);
    ASSERT_EQ(bm_->counters().ssd_pages_written, 0u);
    remember_durable_ssd();
    // 2. Evict them all from NVM, the power failing at fence n.
    std::uint64_t syncs = bm_->counters().ssd_syncs;
    auto note_syncs = [&] {
      if (bm_->counters().ssd_syncs == syncs) return;
      syncs = bm_->counters().ssd_syncs;
      remember_durable_ssd();
    };
    nvm_->device().crash_simulator()->arm_crash_at_fence(n);
    bool crashed = false;
    try {
      for (std::uint64_t i = 0; i < kSlots; ++i) {
        ASSERT_TRUE(bm_->evict_one_nvm_page());
        note_syncs();
      }
    } catch (const SimulatedCrash&) {
      crashed = true;
      note_syncs();
    }
    if (!crashed) {
      EXPECT_EQ(nvm_->slots_in_use(), 0u);
      break;
    }
    ++crashes;
    // 3. Every page is intact in NVM or on SSD, whichever words of the cut fence survived.
    for (std::uint64_t i = 0; i < 4; ++i) {
      const std::uint64_t seed = base_seed + n * 100 + i;
      const std::vector<PageId> lost = pages_lost_after_power_failure(ids, 1, seed);
      ASSERT_TRUE(lost.empty()) << lost.size() << " pages lost, the first " << lost.front()
                                << " (crash image seed " << seed << ")";
    }
  }
  EXPECT_EQ(crashes, kSlots) << "one fence per eviction";
}

TEST_F(TiersNvmEvictionTest, SlotsAreFreedOnlyAfterTheSyncOfTheirSsdWrites) {
  // At the fence that persists the freed headers, the SSD has been synced after the writes.
  create(16, 4);
  allocate_pages(16, 1);
  bm_->flush_all();
  const Counters before = bm_->counters();
  nvm_->device().crash_simulator()->arm_crash_at_fence(1);
  EXPECT_THROW(bm_->evict_nvm_pages(4), SimulatedCrash);
  const Counters at_crash = bm_->counters() - before;
  EXPECT_EQ(at_crash.ssd_pages_written, 4u);
  EXPECT_EQ(at_crash.ssd_syncs, 1u);
  EXPECT_EQ(nvm_->slots_in_use(), 16u) << "the volatile free list took nothing back yet";
}

struct BatchCase {
  std::uint32_t option;  // BufferManagerOptions::nvm_eviction_batch
  std::uint64_t syncs;   // for 16 evictions of dirty pages
};
// Without it googletest prints the struct's bytes, padding included, which memcheck reports
// as a use of uninitialised memory (ctest -L valgrind).
[[maybe_unused]] void PrintTo(const BatchCase& c, std::ostream* os) {
  *os << "{batch " << c.option << ", syncs " << c.syncs << "}";
}

class TiersNvmEvictionBatchTest : public TiersNvmEvictionTest,
                                  public ::testing::WithParamInterface<BatchCase> {};

TEST_P(TiersNvmEvictionBatchTest, SixteenEvictionsCostSixteenOverBatchSyncs) {
  // 32 slots of pages dirty vs SSD; then 16 pages earn admission (their second eviction from
  // DRAM) and each needs a slot. The clock clears every second-chance bit, then takes the
  // dirty pages in slot order, `batch` per round: 16 / batch rounds, one sync each.
  const BatchCase c = GetParam();
  create(32, c.option);
  const std::vector<PageId> resident = allocate_pages(32, 1);
  bm_->flush_all();
  ASSERT_EQ(nvm_->slots_in_use(), 32u);
  const std::vector<PageId> admitted = allocate_pages(16, 2);
  bm_->flush_all();  // NVM full: denied, written to SSD, remembered by the admission set
  ASSERT_EQ(bm_->counters().nvm_admissions_denied, 16u);
  const Counters before = bm_->counters();
  for (PageId id : admitted) bm_->fix_page(id);
  bm_->flush_all();
  const Counters cost = bm_->counters() - before;
  EXPECT_EQ(cost.nvm_admissions, 16u);
  EXPECT_EQ(cost.nvm_evictions, 16u);
  EXPECT_EQ(cost.ssd_pages_written, 16u);
  EXPECT_EQ(cost.ssd_syncs, c.syncs + 1) << "eviction rounds, plus flush_all's own";
  // Every page reads back whole, wherever it went.
  for (PageId id : resident) {
    Guard page = bm_->fix_page(id);
    EXPECT_TRUE(holds(page, 1)) << "page " << id;
  }
  for (PageId id : admitted) {
    Guard page = bm_->fix_page(id);
    EXPECT_TRUE(holds(page, 2)) << "page " << id;
  }
}

INSTANTIATE_TEST_SUITE_P(Batches, TiersNvmEvictionBatchTest,
                         ::testing::Values(BatchCase{1, 16}, BatchCase{8, 2},
                                           BatchCase{0, 4} /* default: 32 slots / 8 */),
                         [](const ::testing::TestParamInfo<BatchCase>& info) {
                           return info.param.option == 0
                                      ? std::string("DefaultBatch")
                                      : "Batch" + std::to_string(info.param.option);
                         });

TEST_F(TiersNvmEvictionTest, SlotsOfAnEvictionRoundAreKeptForPagesTheAdmissionSetAdmits) {
  // Free slots admit any page during warm-up; those an eviction round frees must not, or
  // every round would let the next pages in without the admission set.
  create(32, 8);
  allocate_pages(32, 1);
  bm_->flush_all();
  const std::vector<PageId> earned = allocate_pages(1, 2);
  bm_->flush_all();  // denied once: now in the admission set
  bm_->fix_page(earned[0]);
  bm_->flush_all();  // admitted: a round of 8 evictions, 7 slots left over
  EXPECT_EQ(bm_->counters().nvm_evictions, 8u);
  EXPECT_EQ(bm_->admission_stats().admitted_from_set, 1u);
  EXPECT_EQ(nvm_->slots_in_use(), 25u);
  const Counters before = bm_->counters();
  allocate_pages(4, 3);
  bm_->flush_all();  // new pages, not in the set: denied although 7 slots are free
  const Counters cost = bm_->counters() - before;
  EXPECT_EQ(cost.nvm_admissions_denied, 4u);
  EXPECT_EQ(cost.nvm_admissions, 0u);
  EXPECT_EQ(nvm_->slots_in_use(), 25u);
}

TEST_F(TiersNvmEvictionTest, VictimsAreNeverPagesInDramAndNeverTakenTwice) {
  create(8);
  const std::vector<PageId> ids = allocate_pages(8, 1);
  bm_->flush_all();
  Guard held = bm_->fix_page(ids[3]);  // back in DRAM: its slot backs it
  ASSERT_NE(bm_->location(ids[3]), BufferManager::Location::kNvm);
  EXPECT_EQ(bm_->evict_nvm_pages(100), 7u);
  EXPECT_EQ(nvm_->slots_in_use(), 1u);
  EXPECT_EQ(bm_->counters().nvm_evictions, 7u);
  std::set<SlotId> handed_out;
  while (const std::optional<SlotId> slot = nvm_->allocate_slot()) {
    EXPECT_TRUE(handed_out.insert(*slot).second) << "slot " << *slot << " freed twice";
    EXPECT_TRUE(nvm_->header(*slot).is_free());
  }
  EXPECT_EQ(handed_out.size(), 7u);
  EXPECT_TRUE(holds(held, 1));
  EXPECT_EQ(bm_->evict_nvm_pages(100), 0u) << "the only occupied slot backs a DRAM page";
}

TEST_F(TiersNvmEvictionTest, RestartFreesTheOlderOfTwoSlotsHoldingOnePage) {
  create(4);
  bm_.reset();
  for (SlotId slot = 0; slot < 4; ++slot) ASSERT_EQ(nvm_->allocate_slot(), slot);
  nvm_->write_header(0, 7, 5, true);
  nvm_->free_slot(1);
  nvm_->write_header(2, 7, 9, true);
  nvm_->write_header(3, 8, 1, false);
  BufferManager bm(options(0));
  EXPECT_TRUE(nvm_->header(0).is_free()) << "the older copy of page 7";
  EXPECT_EQ(nvm_->header(2).page_id, 7u);
  EXPECT_EQ(nvm_->header(3).page_id, 8u);
  EXPECT_EQ(nvm_->slots_in_use(), 2u);
  EXPECT_EQ(bm.location(7), BufferManager::Location::kNvm);
}

}  // namespace
}  // namespace tristore
