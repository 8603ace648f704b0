// Random sequences of allocate / free / write / read / sync / reopen against a model: what
// reads back is the last write, allocation is lowest-free, and a reopen restores exactly the
// allocation and metadata of the last sync().
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "common/page_format.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::TempDir;
using testing_support::test_seed;

namespace {

// Page body derived from a version number, so the model stores one integer per page.
void fill(std::byte* page, std::uint64_t version) {
  std::mt19937_64 random(version);
  for (std::size_t i = kPageHeaderSize; i < kPageSize; i += 8) {
    std::uint64_t word = random();
    std::memcpy(page + i, &word, 8);
  }
}

}  // namespace

TEST(SsdPageFileProperty, RandomOperationsMatchModelAcrossReopens) {
  TempDir dir;
  std::mt19937_64 random(test_seed());
  SsdOptions options;
  options.path = (dir.path / "a.ssd").string();
  options.size_bytes = 40 * kPageSize;
  options.create = true;
  auto file = SsdPageFile::create(options);
  options.create = false;

  std::set<PageId> allocated, synced_allocated;
  std::map<PageId, std::uint64_t> written;  // page -> version of its last write
  std::byte metadata = {}, synced_metadata = {};
  std::vector<std::byte> page(kPageSize), expected(kPageSize);
  std::uint64_t next_version = 1;

  for (int step = 0; step < 1500; ++step) {
    int action = static_cast<int>(random() % 100);
    if (action < 30) {
      if (allocated.size() == file->page_capacity()) {
        EXPECT_THROW(file->allocate(), Error);
        continue;
      }
      PageId lowest = 0;
      while (allocated.count(lowest)) ++lowest;
      ASSERT_EQ(file->allocate(), lowest) << "step " << step;
      allocated.insert(lowest);
      written.erase(lowest);
    } else if (action < 45 && !allocated.empty()) {
      auto it = std::next(allocated.begin(), static_cast<long>(random() % allocated.size()));
      file->free(*it);
      written.erase(*it);
      allocated.erase(it);
    } else if (action < 70 && !allocated.empty()) {
      PageId id = *std::next(allocated.begin(), static_cast<long>(random() % allocated.size()));
      fill(page.data(), next_version);
      file->write(id, page.data());
      written[id] = next_version++;
    } else if (action < 90 && !written.empty()) {
      auto [id, version] =
          *std::next(written.begin(), static_cast<long>(random() % written.size()));
      file->read(id, page.data());
      fill(expected.data(), version);
      ASSERT_EQ(std::memcmp(page.data() + kPageHeaderSize, expected.data() + kPageHeaderSize,
                            kPageSize - kPageHeaderSize),
                0)
          << "page " << id << " step " << step;
    } else if (action < 95) {
      metadata = static_cast<std::byte>(random());
      file->metadata()[0] = metadata;
      file->sync();
      synced_allocated = allocated;
      synced_metadata = metadata;
    } else {
      // Reopen without syncing: unsynced allocations and frees are forgotten.
      file.reset();
      file = SsdPageFile::open(options);
      allocated = synced_allocated;
      metadata = synced_metadata;
      for (auto it = written.begin(); it != written.end();)
        it = allocated.count(it->first) ? std::next(it) : written.erase(it);
      ASSERT_EQ(file->metadata()[0], synced_metadata);
    }
    ASSERT_EQ(file->pages_in_use(), allocated.size()) << "step " << step;
  }
  for (PageId id = 0; id < file->page_capacity(); ++id)
    ASSERT_EQ(file->is_allocated(id), allocated.count(id) == 1) << id;
}
