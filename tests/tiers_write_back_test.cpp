// write_back_all, the checkpoint's write-back: after random writes over a two-level structure
// (directory pages holding swips to data pages, directory swips in a DRAM array) it must leave
// DRAM as it was (residency, swizzled swips, swizzled hits), and the files as they are right
// then (NVM: the crash simulator's image after a crash; SSD: a copy) must open as a database
// in which every page reads back as the model says, swips as page ids and never as pointers.
// Seeded: the seed is printed; TRISTORE_SEED=<n> replays it. Also the write-ahead hook, and
// the write-back rounds of checkpoints beside changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/page_format.hpp"
#include "nvm/nvm_layout.hpp"
#include "nvm/nvm_tier.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tests/test_support.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

using Guard = BufferManager::Guard;
using testing::Architecture;
using testing::kArchitectures;
using Location = BufferManager::Location;

constexpr std::size_t kDirectories = 4;
constexpr std::size_t kChildren = 16;
constexpr std::uint32_t kSwipArea = 64;
constexpr std::uint32_t kSwipAreaEnd = kSwipArea + kChildren * sizeof(Swip);
constexpr std::uint32_t kBody = sizeof(PageHeader);  // checked bytes start after the header
constexpr std::uint64_t kLogBytes = 4096;
constexpr std::size_t kStepsPerRound = 700;
constexpr int kRounds = 3;

std::uint32_t swip_offset(std::size_t index) {
  return kSwipArea + static_cast<std::uint32_t>(index * sizeof(Swip));
}

// The NVM and SSD files of one run (NVM with crash simulation) and the paths of their copies.
class Files {
 public:
  explicit Files(const Architecture& arch) : arch_(arch) {
    if (arch.nvm) nvm = NvmTier::create(nvm_options(files_.nvm, true));
    if (arch.ssd) ssd = SsdPageFile::create(ssd_options(files_.ssd, true));
  }
  ~Files() {  // the tiers close before their directories go
    nvm.reset();
    ssd.reset();
  }

  // The files as a crash right now would leave them: NVM's durable image (unflushed words torn
  // at random), and the SSD file as it is.
  void crash_copy(std::uint64_t seed) {
    if (nvm) nvm->device().crash_simulator()->write_crash_image(seed, nvm_copy_path());
    if (ssd)
      std::filesystem::copy_file(ssd->path(), ssd_copy_path(),
                                 std::filesystem::copy_options::overwrite_existing);
  }
  std::unique_ptr<NvmTier> open_nvm_copy() const {
    return arch_.nvm ? NvmTier::open(nvm_options(nvm_copy_path(), false)) : nullptr;
  }
  std::unique_ptr<SsdPageFile> open_ssd_copy() const {
    return arch_.ssd ? SsdPageFile::open(ssd_options(ssd_copy_path(), false)) : nullptr;
  }

  std::unique_ptr<NvmTier> nvm;
  std::unique_ptr<SsdPageFile> ssd;

 private:
  std::string nvm_copy_path() const { return files_.nvm_dir.file("copy.nvm"); }
  std::string ssd_copy_path() const { return files_.ssd_dir.file("copy.ssd"); }
  std::uint64_t nvm_slots() const { return arch_.ssd ? 40 : 100; }
  NvmTierOptions nvm_options(const std::string& path, bool create) const {
    NvmTierOptions options;
    options.device.path = path;
    options.device.size_bytes = create ? NvmLayout::compute(nvm_slots(), kLogBytes).end : 0;
    options.device.create = create;
    options.device.crash_simulation = create;
    options.log_bytes = kLogBytes;
    return options;
  }
  static SsdOptions ssd_options(const std::string& path, bool create) {
    SsdOptions options;
    options.path = path;
    options.create = create;
    options.size_bytes = create ? (200 + 3) * kPageSize : 0;
    return options;
  }

  Architecture arch_;
  testing_support::DatabaseFiles files_{"tristore-write-back"};
};

BufferManagerOptions manager_options(const Architecture& arch, NvmTier* nvm, SsdPageFile* ssd) {
  BufferManagerOptions options;
  options.dram_bytes = 24 * sizeof(FullFrame);
  options.nvm = nvm;
  options.ssd = ssd;
  options.cache_line_grained = arch.cache_line_grained;
  options.mini_pages = arch.mini_pages;
  options.swizzling = arch.swizzling;
  return options;
}

// What DRAM holds, seen without fixing anything.
struct Residency {
  std::map<PageId, Location> locations;
  std::uint64_t dram_bytes_used;
  std::array<Swip, kDirectories> roots;
  bool operator==(const Residency&) const = default;
};

class WriteBackRun {
 public:
  WriteBackRun(const Architecture& arch, std::uint64_t seed)
      : arch_(arch), seed_(seed), random_(seed), files_(arch) {
    bm_ =
        std::make_unique<BufferManager>(manager_options(arch, files_.nvm.get(), files_.ssd.get()));
    for (std::size_t d = 0; d < kDirectories; ++d) {
      Guard directory = bm_->allocate_page();
      roots_[d] = bm_->swip_of(directory);
      directory_ids_[d] = directory.page_id();
      model_[directory.page_id()].assign(kPageSize, std::byte{0});
      for (std::size_t i = 0; i < kChildren; ++i) {
        Guard child = bm_->allocate_page();
        const Swip swip = bm_->swip_of(child);
        std::memcpy(directory.write(swip_offset(i), sizeof(Swip)), &swip, sizeof(Swip));
        std::memcpy(model_[directory.page_id()].data() + swip_offset(i), &swip, sizeof(Swip));
        children_[d][i] = child.page_id();
        model_[child.page_id()].assign(kPageSize, std::byte{0});
      }
    }
  }

  void run() {
    std::size_t swizzled_children_seen = 0;
    for (int round = 0; round < kRounds; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      for (std::size_t step = 0; step < kStepsPerRound; ++step) random_step();
      swizzled_children_seen += check_write_back_keeps_dram(round);
      check_crash_copy_reads_back(round);
    }
    if (arch_.swizzling) {
      EXPECT_GT(swizzled_children_seen, 0u) << "no swizzled child swip at any write-back";
    }
  }

 private:
  void random_step() {
    const std::size_t d = random_() % kDirectories;
    Guard directory = bm_->fix(roots_[d], nullptr);
    const unsigned dice = static_cast<unsigned>(random_() % 100);
    if (dice < 25) {
      write_random(directory, kSwipAreaEnd);
    } else if (dice < 92) {
      Guard child = bm_->fix(swip_in(directory, random_() % kChildren), &directory);
      write_random(child, kBody);
    } else {
      directory.release();
      bm_->evict_one_dram_frame();
      if (random_() % 2 == 0) bm_->evict_one_nvm_page();
    }
  }

  Swip& swip_in(Guard& directory, std::size_t index) {
    return *reinterpret_cast<Swip*>(
        const_cast<std::byte*>(directory.read(swip_offset(index), sizeof(Swip))));
  }

  // Mostly within a line or two, sometimes a long run.
  void write_random(Guard& page, std::uint32_t from) {
    const std::uint32_t max_length = random_() % 8 == 0 ? 3000 : 100;
    const auto length = static_cast<std::uint32_t>(1 + random_() % max_length);
    const auto offset = static_cast<std::uint32_t>(from + random_() % (kPageSize - from - length));
    std::byte* bytes = page.write(offset, length);
    std::byte* model = model_[page.page_id()].data();
    for (std::uint32_t i = 0; i < length; ++i)
      bytes[i] = model[offset + i] = static_cast<std::byte>(random_());
  }

  Residency residency() const {
    Residency result{{}, bm_->memory_usage().dram_bytes_used, roots_};
    for (const auto& [page_id, bytes] : model_) result.locations[page_id] = bm_->location(page_id);
    return result;
  }

  // Returns the number of swizzled child swips found after the write-back.
  std::size_t check_write_back_keeps_dram(int round) {
    // 1. Write back: nothing leaves DRAM, and a second write-back finds nothing dirty.
    const Residency before = residency();
    const Counters counters_before = bm_->counters();
    bm_->write_back_all();
    const Counters after_first = bm_->counters();
    EXPECT_EQ(after_first.dram_evictions, counters_before.dram_evictions);
    EXPECT_TRUE(residency() == before) << "write_back_all changed what DRAM holds";
    bm_->write_back_all();
    EXPECT_EQ(bm_->counters().nvm_lines_written, after_first.nvm_lines_written);
    EXPECT_EQ(bm_->counters().ssd_pages_written, after_first.ssd_pages_written);
    if (round == 0) {
      EXPECT_GT(after_first.nvm_lines_written + after_first.ssd_pages_written,
                counters_before.nvm_lines_written + counters_before.ssd_pages_written);
    }
    // 2. Swizzled swips still lead to their pages without a lookup.
    std::size_t swizzled_children = 0;
    for (std::size_t d = 0; d < kDirectories; ++d) {
      if (!roots_[d].is_swizzled()) continue;
      const std::uint64_t hits = bm_->own_counters().swizzled_hits;
      Guard directory = bm_->fix(roots_[d], nullptr);
      EXPECT_EQ(bm_->own_counters().swizzled_hits, hits + 1);
      EXPECT_EQ(directory.page_id(), directory_ids_[d]);
      for (std::size_t i = 0; i < kChildren; ++i) {
        Swip& swip = swip_in(directory, i);
        if (!swip.is_swizzled()) continue;
        ++swizzled_children;
        const std::uint64_t child_hits = bm_->own_counters().swizzled_hits;
        Guard child = bm_->fix(swip, &directory);
        EXPECT_EQ(bm_->own_counters().swizzled_hits, child_hits + 1);
        EXPECT_EQ(child.page_id(), children_[d][i]);
      }
    }
    return swizzled_children;
  }

  // The files as a crash right after write_back_all leaves them, opened without flush_all.
  void check_crash_copy_reads_back(int round) {
    files_.crash_copy(seed_ + static_cast<std::uint64_t>(round));
    std::unique_ptr<NvmTier> nvm = files_.open_nvm_copy();
    std::unique_ptr<SsdPageFile> ssd = files_.open_ssd_copy();
    BufferManager reopened(manager_options(arch_, nvm.get(), ssd.get()));
    for (const auto& [page_id, expected] : model_) {
      SCOPED_TRACE("page " + std::to_string(page_id));
      Guard page = reopened.fix_page(page_id);
      const std::byte* bytes = page.read(kBody, kPageSize - kBody);
      ASSERT_EQ(std::memcmp(bytes, expected.data() + kBody, kPageSize - kBody), 0)
          << "first difference at byte "
          << kBody +
                 (std::mismatch(bytes, bytes + kPageSize - kBody, expected.data() + kBody).first -
                  bytes);
    }
    for (std::size_t d = 0; d < kDirectories; ++d) {
      Guard directory = reopened.fix_page(directory_ids_[d]);
      for (std::size_t i = 0; i < kChildren; ++i) {
        Swip swip;
        std::memcpy(&swip, directory.read(swip_offset(i), sizeof(Swip)), sizeof(Swip));
        ASSERT_FALSE(swip.is_swizzled()) << "a DRAM pointer reached a page's home";
        EXPECT_EQ(swip.page_id(), children_[d][i]);
      }
    }
  }

  Architecture arch_;
  std::uint64_t seed_;
  std::mt19937_64 random_;
  Files files_;
  std::unique_ptr<BufferManager> bm_;  // destroyed without flush_all, like a crash
  std::array<Swip, kDirectories> roots_;
  std::array<PageId, kDirectories> directory_ids_{};
  std::array<std::array<PageId, kChildren>, kDirectories> children_{};
  std::map<PageId, std::vector<std::byte>> model_;  // bytes before kBody unchecked
};

class WriteBackAll : public ::testing::TestWithParam<Architecture> {};

TEST_P(WriteBackAll, KeepsDramResidentAndACrashCopyReadsBackEveryPage) {
  const Architecture& arch = GetParam();
  WriteBackRun run(arch, testing_support::test_seed());
  run.run();
}

INSTANTIATE_TEST_SUITE_P(Architectures, WriteBackAll, ::testing::ValuesIn(kArchitectures),
                         testing::ParamName{});

// The write-ahead rule: the hook sees each dirty page's LSN before the page is written, and a
// clean page is not written (no hook call).
TEST(WriteBackAllHook, IsCalledWithEachDirtyPagesLsnBeforeItsWrite) {
  for (const Architecture& arch : {kArchitectures[0], kArchitectures[4], kArchitectures[5]}) {
    SCOPED_TRACE(arch.name);
    Files files(arch);
    std::vector<Lsn> hooked;
    std::uint64_t writes_at_last_hook = 0;
    BufferManager* manager = nullptr;
    BufferManagerOptions options = manager_options(arch, files.nvm.get(), files.ssd.get());
    options.before_write_back = [&](Lsn lsn) {
      hooked.push_back(lsn);
      const Counters now = manager->counters();
      writes_at_last_hook = now.nvm_lines_written + now.ssd_pages_written;
    };
    BufferManager bm(options);
    manager = &bm;
    PageId first = 0;
    for (Lsn lsn : {Lsn{7}, Lsn{9}}) {
      Guard page = bm.allocate_page();
      if (lsn == 7) first = page.page_id();
      std::memcpy(page.write(offsetof(PageHeader, lsn), sizeof(Lsn)), &lsn, sizeof(Lsn));
    }
    const Counters before = bm.counters();
    bm.write_back_all();
    std::vector<Lsn> sorted = hooked;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::vector<Lsn>{7, 9}));
    // The last hook came before the last page's write, after the first's.
    EXPECT_LT(writes_at_last_hook,
              bm.counters().nvm_lines_written + bm.counters().ssd_pages_written);
    EXPECT_GT(writes_at_last_hook, before.nvm_lines_written + before.ssd_pages_written);
    bm.write_back_all();
    EXPECT_EQ(hooked.size(), 2u) << "a clean page was written back again";
    {
      Guard page = bm.fix_page(first);
      const Lsn lsn = 11;
      std::memcpy(page.write(offsetof(PageHeader, lsn), sizeof(Lsn)), &lsn, sizeof(Lsn));
    }
    bm.write_back_all();
    ASSERT_EQ(hooked.size(), 3u);
    EXPECT_EQ(hooked[2], 11u);
  }
}

// A checkpoint beside changes (engine/transaction_manager.cpp): after begin_write_back_round,
// write_back_beside writes back the pages dirty since before the round (also when changed
// again since), a batch at a time, and not those first dirtied in the new round, whose changes
// are logged after the checkpoint began; write_back_all(true) leaves those too, and a page
// cleaned by the batches and dirtied again counts as new. Told by the write-ahead hook, which
// sees each page's LSN before it is written.
TEST(WriteBackRounds, BesideChangesOnlyPagesDirtyBeforeTheRoundAreWritten) {
  for (const Architecture& arch : {kArchitectures[0], kArchitectures[4], kArchitectures[5]}) {
    SCOPED_TRACE(arch.name);
    Files files(arch);
    std::vector<Lsn> hooked;
    BufferManagerOptions options = manager_options(arch, files.nvm.get(), files.ssd.get());
    options.before_write_back = [&](Lsn lsn) { hooked.push_back(lsn); };
    BufferManager bm(options);
    auto set_lsn = [](Guard& page, Lsn lsn) {
      std::memcpy(page.write(offsetof(PageHeader, lsn), sizeof(Lsn)), &lsn, sizeof(Lsn));
    };
    // 1. Three pages, two of them dirty before the round, then written back clean.
    std::array<PageId, 3> ids{};
    for (std::size_t i = 0; i < ids.size(); ++i) {
      Guard page = bm.allocate_page();
      ids[i] = page.page_id();
      set_lsn(page, 5);
    }
    bm.write_back_all();
    hooked.clear();
    for (Lsn lsn : {Lsn{7}, Lsn{9}}) {
      Guard page = bm.fix_page(ids[lsn == 7 ? 0 : 1]);
      set_lsn(page, lsn);
    }
    // 2. The round begins; the first page changes again, the third for the first time.
    bm.begin_write_back_round();
    {
      Guard first = bm.fix_page(ids[0]);
      set_lsn(first, 12);
      Guard third = bm.fix_page(ids[2]);
      set_lsn(third, 11);
    }
    // 3. The batches, one page at a time: the first and second pages, not the third.
    std::size_t batches = 0;
    while (!bm.write_back_beside(1)) ++batches;
    std::vector<Lsn> sorted = hooked;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<Lsn>{9, 12}));
    EXPECT_GE(batches, 1u) << "two pages to write, one per call";
    // 4. The second page, dirtied again, now belongs to the round: the end leaves both.
    {
      Guard second = bm.fix_page(ids[1]);
      set_lsn(second, 13);
    }
    bm.write_back_all(true);
    EXPECT_EQ(hooked.size(), 2u) << "a page first dirtied in the round was written";
    // 5. A checkpoint of its own writes them all.
    bm.write_back_all();
    sorted.assign(hooked.begin() + 2, hooked.end());
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<Lsn>{11, 13}));
  }
}

}  // namespace
}  // namespace tristore
