// Model-based randomised test of the buffer manager: long random sequences of allocate, fix,
// read, write, release, forced eviction, swip moves, frees, flushes and reopens, over tiny DRAM
// and NVM pools, every byte checked against a reference model (a vector per page). A two-level
// structure (directory pages holding swips to data pages, directory swips in a DRAM array)
// exercises swizzling. The same sequences run for every architecture and switch; each run
// must show every transition of the paper's Figure 6 that its architecture has.
// Seeded: the seed is printed; TRISTORE_SEED=<n> replays it.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "common/page_format.hpp"
#include "tests/test_support.hpp"
#include "tests/tiers_test_support.hpp"
#include "tiers/buffer_manager.hpp"

namespace tristore {
namespace {

using Guard = BufferManager::Guard;
using testing::Architecture;
using testing::kArchitectures;
using testing::TestTiers;

constexpr std::size_t kDirectories = 3;
constexpr std::size_t kSwipsPerDirectory = 16;
constexpr std::uint32_t kSwipArea = 64;  // directory swips start after the PageHeader's line
constexpr std::size_t kSteps = 2500;

const Swip kEmptySwip = Swip::from_page_id(0);

std::uint32_t swip_offset(std::size_t index) {
  return kSwipArea + static_cast<std::uint32_t>(index * sizeof(Swip));
}

class ModelRun {
 public:
  ModelRun(const Architecture& arch, std::uint64_t seed)
      : arch_(arch),
        random_(seed),
        tiers_(arch.name, arch.nvm ? (arch.ssd ? 10 : 64) : 0, arch.ssd ? 160 : 0) {
    open_manager();
    for (auto& directory : directories_) {
      Guard page = bm_->allocate_page();
      directory = bm_->swip_of(page);
      directory_ids_.push_back(page.page_id());
      for (std::size_t i = 0; i < kSwipsPerDirectory; ++i) store_swip(page, i, kEmptySwip);
    }
  }

  void run() {
    for (std::size_t step = 0; step < kSteps; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const unsigned dice = static_cast<unsigned>(random_() % 100);
      if (dice < 14) {
        allocate();
      } else if (dice < 66) {
        access();
      } else if (dice < 78) {
        for (unsigned i = random_() % 4; i-- > 0;) bm_->evict_one_dram_frame();
      } else if (dice < 83) {
        bm_->evict_one_nvm_page();
      } else if (dice < 91) {
        move_swips();
      } else if (dice < 94) {
        free_one();
      } else if (dice < 98) {
        verify_all();
      } else {
        held_.release();
        bm_->flush_all();
        for (const Swip& directory : directories_) ASSERT_FALSE(directory.is_swizzled());
        if (random_() % 2 == 0) reopen();
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
    held_.release();
    bm_->flush_all();
    reopen();
    verify_all();
  }

  Counters totals() {
    Counters total = finished_;
    total += bm_->counters();
    return total;
  }
  AdmissionStats admission_totals() {
    AdmissionStats total = finished_admissions_;
    total.admitted_from_set += bm_->admission_stats().admitted_from_set;
    total.admitted_to_free_slot += bm_->admission_stats().admitted_to_free_slot;
    return total;
  }
  std::size_t pages() const { return images_.size(); }

 private:
  struct Place {
    std::size_t directory;
    std::size_t index;
  };

  void open_manager() {
    BufferManagerOptions options;
    options.dram_bytes = 7 * FramePool::kSlabBytes + 100;
    options.nvm = tiers_.nvm.get();
    options.ssd = tiers_.ssd.get();
    options.cache_line_grained = arch_.cache_line_grained;
    options.mini_pages = arch_.mini_pages;
    options.swizzling = arch_.swizzling;
    options.admission_set_size = 8;
    bm_ = std::make_unique<BufferManager>(options);
  }

  void reopen() {
    finished_ += bm_->counters();
    finished_admissions_.admitted_from_set += bm_->admission_stats().admitted_from_set;
    finished_admissions_.admitted_to_free_slot += bm_->admission_stats().admitted_to_free_slot;
    bm_.reset();
    tiers_.reopen();
    open_manager();
    for (std::size_t d = 0; d < kDirectories; ++d)
      directories_[d] = Swip::from_page_id(directory_ids_[d]);
  }

  std::vector<Place> places(bool occupied) const {
    std::vector<Place> result;
    for (std::size_t d = 0; d < kDirectories; ++d)
      for (std::size_t i = 0; i < kSwipsPerDirectory; ++i)
        if ((children_[d][i] != kInvalidPageId) == occupied) result.push_back({d, i});
    return result;
  }
  Place pick(const std::vector<Place>& from) { return from[random_() % from.size()]; }

  Guard fix_directory(std::size_t d) { return bm_->fix(directories_[d], nullptr); }
  Swip& swip_in(Guard& directory, std::size_t index) {
    return *reinterpret_cast<Swip*>(
        const_cast<std::byte*>(directory.read(swip_offset(index), sizeof(Swip))));
  }
  Swip* swips_in(Guard& directory, std::size_t index, std::size_t count) {
    const auto bytes = static_cast<std::uint32_t>(count * sizeof(Swip));
    return reinterpret_cast<Swip*>(
        const_cast<std::byte*>(directory.read(swip_offset(index), bytes)));
  }
  void store_swip(Guard& directory, std::size_t index, Swip swip) {
    std::memcpy(directory.write(swip_offset(index), sizeof(Swip)), &swip, sizeof(Swip));
  }

  // A random byte range outside the PageHeader: mostly a line or two, sometimes long.
  std::pair<std::uint32_t, std::uint32_t> random_range() {
    const auto offset =
        static_cast<std::uint32_t>(kPageHeaderSize + random_() % (kPageSize - kPageHeaderSize));
    const std::uint32_t longest = static_cast<std::uint32_t>(kPageSize) - offset;
    const std::uint32_t wanted = random_() % 8 == 0 ? 1 + random_() % 2000 : 1 + random_() % 100;
    return {offset, std::min(wanted, longest)};
  }

  void check_range(Guard& page, std::uint32_t offset, std::uint32_t length) {
    const std::byte* bytes = page.read(offset, length);
    const std::vector<std::byte>& image = images_.at(page.page_id());
    ASSERT_EQ(std::memcmp(bytes, image.data() + offset, length), 0)
        << "page " << page.page_id() << " bytes [" << offset << ", " << offset + length << ")";
  }
  void write_range(Guard& page, std::uint32_t offset, std::uint32_t length) {
    std::byte* bytes = page.write(offset, length);
    std::vector<std::byte>& image = images_.at(page.page_id());
    for (std::uint32_t i = 0; i < length; ++i) image[offset + i] = bytes[i] = std::byte(random_());
  }

  void allocate() {
    const std::vector<Place> free = places(false);
    if (free.empty()) return;
    const Place place = pick(free);
    Guard directory = fix_directory(place.directory);
    Guard page = bm_->allocate_page();
    std::vector<std::byte> image(kPageSize, std::byte{0});
    PageHeader header{};
    header.page_id = page.page_id();
    std::memcpy(image.data(), &header, sizeof(header));
    images_[page.page_id()] = std::move(image);
    store_swip(directory, place.index, bm_->swip_of(page));
    children_[place.directory][place.index] = page.page_id();
    const auto [offset, length] = random_range();
    write_range(page, offset, length);
  }

  void access() {
    const std::vector<Place> used = places(true);
    if (used.empty()) return;
    const Place place = pick(used);
    Guard directory = fix_directory(place.directory);
    Guard page = bm_->fix(swip_in(directory, place.index), &directory);
    ASSERT_EQ(page.page_id(), children_[place.directory][place.index]);
    if (random_() % 2 == 0) directory.release();
    for (unsigned op = 1 + random_() % 6; op-- > 0;) {
      const auto [offset, length] = random_range();
      const unsigned kind = random_() % 10;
      if (kind < 5) {
        check_range(page, offset, length);
      } else if (kind < 9) {
        write_range(page, offset, length);
      } else {
        const std::byte* whole = page.whole_page();
        const std::vector<std::byte>& image = images_.at(page.page_id());
        ASSERT_EQ(std::memcmp(whole + kPageHeaderSize, image.data() + kPageHeaderSize,
                              kPageSize - kPageHeaderSize),
                  0);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
    // Sometimes keep the page fixed across later steps: it must stay put and intact.
    if (random_() % 4 == 0) held_ = std::move(page);
    if (held_ && random_() % 3 == 0) {
      const auto [offset, length] = random_range();
      check_range(held_, offset, length);
    }
  }

  void move_swips() {
    // A run of directory slots moves (possibly overlapping, possibly to another directory);
    // the vacated source slots are then cleared, as a B-tree would.
    const std::size_t count = 1 + random_() % 4;
    const std::size_t from_dir = random_() % kDirectories, to_dir = random_() % kDirectories;
    const std::size_t from = random_() % (kSwipsPerDirectory - count + 1);
    const std::size_t to = random_() % (kSwipsPerDirectory - count + 1);
    if (from_dir == to_dir && from == to) return;
    // Destination slots outside the source run must be free (no page may lose its swip).
    for (std::size_t i = 0; i < count; ++i) {
      const bool inside_source = from_dir == to_dir && to + i >= from && to + i < from + count;
      if (!inside_source && children_[to_dir][to + i] != kInvalidPageId) return;
    }
    Guard source = fix_directory(from_dir);
    Guard other;
    if (to_dir != from_dir) other = fix_directory(to_dir);
    Guard& destination = to_dir == from_dir ? source : other;
    bm_->move_swips(destination, swip_offset(to), &source, swips_in(source, from, count),
                    static_cast<std::uint32_t>(count));
    std::array<PageId, kSwipsPerDirectory> moved;
    for (std::size_t i = 0; i < count; ++i) moved[i] = children_[from_dir][from + i];
    for (std::size_t i = 0; i < count; ++i) {
      const bool overwritten = from_dir == to_dir && from + i >= to && from + i < to + count;
      if (!overwritten) {
        children_[from_dir][from + i] = kInvalidPageId;
        store_swip(source, from + i, kEmptySwip);
      }
    }
    for (std::size_t i = 0; i < count; ++i) children_[to_dir][to + i] = moved[i];
  }

  void free_one() {
    const std::vector<Place> used = places(true);
    if (used.empty()) return;
    const Place place = pick(used);
    if (held_ && held_.page_id() == children_[place.directory][place.index]) held_.release();
    Guard directory = fix_directory(place.directory);
    Guard page = bm_->fix(swip_in(directory, place.index), &directory);
    const PageId id = page.page_id();
    bm_->free_page(std::move(page));
    store_swip(directory, place.index, kEmptySwip);
    children_[place.directory][place.index] = kInvalidPageId;
    images_.erase(id);
    ASSERT_EQ(bm_->location(id), BufferManager::Location::kNowhere);
  }

  void verify_all() {
    for (const Place& place : places(true)) {
      Guard directory = fix_directory(place.directory);
      Guard page = bm_->fix(swip_in(directory, place.index), &directory);
      ASSERT_EQ(page.page_id(), children_[place.directory][place.index]);
      directory.release();
      const std::vector<std::byte>& image = images_.at(page.page_id());
      if (random_() % 2 == 0) {
        const std::byte* whole = page.whole_page();
        ASSERT_EQ(std::memcmp(whole + kPageHeaderSize, image.data() + kPageHeaderSize,
                              kPageSize - kPageHeaderSize),
                  0)
            << "page " << page.page_id();
      } else {
        for (int i = 0; i < 4; ++i) {
          const auto [offset, length] = random_range();
          check_range(page, offset, length);
        }
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  const Architecture& arch_;
  std::mt19937_64 random_;
  TestTiers tiers_;
  std::unique_ptr<BufferManager> bm_;
  std::array<Swip, kDirectories> directories_{};
  std::vector<PageId> directory_ids_;
  std::array<std::array<PageId, kSwipsPerDirectory>, kDirectories> children_ = [] {
    std::array<std::array<PageId, kSwipsPerDirectory>, kDirectories> all;
    for (auto& directory : all) directory.fill(kInvalidPageId);
    return all;
  }();
  std::map<PageId, std::vector<std::byte>> images_;
  Guard held_;  // declared after bm_: released before the manager goes
  Counters finished_;
  AdmissionStats finished_admissions_;
};

class TiersBufferManagerModel : public ::testing::TestWithParam<Architecture> {};

TEST_P(TiersBufferManagerModel, RandomOperationsMatchTheModelAndReachEveryTransition) {
  const Architecture& arch = GetParam();
  ModelRun run(arch, testing_support::test_seed());
  run.run();
  if (HasFatalFailure()) return;
  const Counters c = run.totals();
  EXPECT_GT(run.pages(), 10u);
  EXPECT_GT(c.dram_evictions, 0u) << "(3) DRAM eviction";
  EXPECT_GT(c.page_table_lookups, 0u);
  if (arch.nvm && arch.ssd) {
    EXPECT_GT(c.ssd_pages_read, 0u) << "(1) SSD -> DRAM";
    EXPECT_GT(c.nvm_lines_read, 0u) << "(2) NVM -> DRAM";
    EXPECT_GT(c.nvm_admissions, 0u) << "(4) admitted to NVM";
    EXPECT_GT(run.admission_totals().admitted_from_set, 0u)
        << "(4) admitted through the admission set";
    EXPECT_GT(c.nvm_admissions_denied, 0u) << "(5) denied: to SSD";
    EXPECT_GT(c.ssd_pages_written, 0u) << "(5)/(6) written to SSD";
    EXPECT_GT(c.nvm_evictions, 0u) << "(6) NVM eviction";
    EXPECT_GT(c.nvm_lines_written, 0u);
  }
  if (arch.mini_pages) {
    EXPECT_GT(c.mini_pages_created, 0u);
    EXPECT_GT(c.mini_page_promotions, 0u);
  } else {
    EXPECT_EQ(c.mini_pages_created, 0u);
  }
  if (arch.nvm && !arch.cache_line_grained) {
    EXPECT_EQ(c.nvm_lines_read % kLinesPerPage, 0u) << "whole pages only";
  }
  if (arch.swizzling) {
    EXPECT_GT(c.swizzled_hits, 0u);
  } else {
    EXPECT_EQ(c.swizzled_hits, 0u);
  }
  if (!arch.ssd) {  // basic-nvm: NVM is every page's home
    EXPECT_GT(c.nvm_lines_read, 0u);
    EXPECT_GT(c.nvm_lines_written, 0u);
    EXPECT_EQ(c.nvm_admissions + c.nvm_evictions + c.ssd_pages_read + c.ssd_pages_written, 0u);
  }
  if (!arch.nvm) {  // ssd-bm
    EXPECT_GT(c.ssd_pages_read, 0u);
    EXPECT_GT(c.ssd_pages_written, 0u);
    EXPECT_EQ(c.nvm_lines_read + c.nvm_lines_written + c.nvm_admissions, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, TiersBufferManagerModel,
                         ::testing::ValuesIn(kArchitectures), testing::ParamName{});

}  // namespace
}  // namespace tristore
