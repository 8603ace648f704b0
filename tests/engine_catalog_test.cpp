// The catalog in its 2 KiB metadata area: two copies, a save writing the one that is not the
// newest valid copy, so that a crash tearing a save (basic-nvm and nvm-direct write the area
// in place in NVM at every checkpoint, and a root that moved changes it) leaves the catalog of
// the save before; load takes the newest valid copy.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

#include "common/checksum.hpp"
#include "common/error.hpp"
#include "engine/catalog.hpp"

namespace tristore {
namespace {

constexpr std::size_t kArea = 2048;
using Area = std::array<std::byte, kArea>;

// A catalog of `tables` tables named t0, t1, ..., table i's root page `first_root + i`.
Catalog catalog_of(std::size_t tables, PageId first_root) {
  Catalog catalog;
  for (std::size_t i = 0; i < tables; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "t%zu", i);
    catalog.add(name, 8, 16 + i, Swip::from_page_id(first_root + i));
  }
  return catalog;
}
void save(Catalog& catalog, Area& area) {
  catalog.save(area, [](Swip& root) { return root.page_id(); });
}
std::vector<PageId> roots_of(const Catalog& catalog) {
  std::vector<PageId> roots;
  for (const auto& entry : catalog.entries()) roots.push_back(entry->root.page_id());
  return roots;
}
std::vector<PageId> roots(std::size_t tables, PageId first_root) {
  std::vector<PageId> out;
  for (std::size_t i = 0; i < tables; ++i) out.push_back(first_root + i);
  return out;
}

TEST(CatalogCopies, EachSaveIsLoadedAndAnAreaNeverWrittenIsEmpty) {
  Area area{};
  EXPECT_TRUE(Catalog::load(area).entries().empty());
  for (PageId round = 0; round < 5; ++round) {
    Catalog catalog = catalog_of(6, 100 * round);
    save(catalog, area);
    const Catalog loaded = Catalog::load(area);
    EXPECT_EQ(roots_of(loaded), roots(6, 100 * round)) << "save " << round;
    ASSERT_EQ(loaded.entries().size(), 6u);
    EXPECT_EQ(loaded.entries()[5]->name, "t5");
    EXPECT_EQ(loaded.entries()[5]->value_size, 21u);
  }
}

// Every way a crash can leave the second save's half (any prefix of its bytes written, or any
// single 8-byte word of it not written) loads the first save or the second, never an error.
TEST(CatalogCopies, ATornSaveLeavesTheSaveBefore) {
  Area area{};
  Catalog first = catalog_of(10, 1000);
  save(first, area);
  save(first, area);  // both halves hold a valid copy: the next save overwrites the older
  Catalog second = catalog_of(10, 5000);
  Area saved = area;
  save(second, saved);
  std::size_t changed_words = 0;
  for (std::size_t word = 0; word < kArea / 8; ++word) {
    if (std::memcmp(&area[word * 8], &saved[word * 8], 8) == 0) continue;
    ++changed_words;
    Area prefix = area;  // the save's words up to this one written, the rest not
    std::memcpy(prefix.data(), saved.data(), word * 8);
    Area hole = saved;  // every word of the save written but this one
    std::memcpy(&hole[word * 8], &area[word * 8], 8);
    for (const Area* torn : {&prefix, &hole}) {
      const std::vector<PageId> loaded = roots_of(Catalog::load(*torn));
      EXPECT_TRUE(loaded == roots(10, 1000) || loaded == roots(10, 5000)) << "word " << word;
    }
    EXPECT_EQ(roots_of(Catalog::load(hole)), roots(10, 1000)) << "word " << word;
  }
  EXPECT_GT(changed_words, 10u);
  EXPECT_EQ(roots_of(Catalog::load(saved)), roots(10, 5000));
}

TEST(CatalogCopies, BothCopiesDamagedIsAnError) {
  Area area{};
  Catalog catalog = catalog_of(3, 7);
  save(catalog, area);
  save(catalog, area);
  area[40] ^= std::byte{1};
  area[kArea / 2 + 40] ^= std::byte{1};
  EXPECT_THROW(Catalog::load(area), Error);
}

// The single copy of an earlier version: magic "RICATAG1", count, crc32c of the entries, the
// entries (64 bytes each) from byte 16.
Area single_copy_area(std::size_t tables) {
  Area area{};
  const std::uint64_t magic = 0x31474154'41434952;
  const auto count = static_cast<std::uint32_t>(tables);
  std::vector<std::byte> entries(tables * 64);
  for (std::size_t i = 0; i < tables; ++i) {
    char name[16];
    const int length = std::snprintf(name, sizeof(name), "old%zu", i);
    std::memcpy(&entries[i * 64], name, static_cast<std::size_t>(length));
    const PageId root = 40 + i;
    const std::uint32_t key_size = 8, value_size = 32;
    std::memcpy(&entries[i * 64 + 48], &root, sizeof(root));
    std::memcpy(&entries[i * 64 + 56], &key_size, sizeof(key_size));
    std::memcpy(&entries[i * 64 + 60], &value_size, sizeof(value_size));
  }
  const std::uint32_t checksum = crc32c(entries.data(), entries.size());
  std::memcpy(&area[0], &magic, 8);
  std::memcpy(&area[8], &count, 4);
  std::memcpy(&area[12], &checksum, 4);
  std::memcpy(&area[16], entries.data(), entries.size());
  return area;
}

TEST(CatalogCopies, ASingleCopyOfAnEarlierVersionIsReadAndKeptUntilASaveIsWhole) {
  Area area = single_copy_area(4);
  Catalog old = Catalog::load(area);
  EXPECT_EQ(roots_of(old), roots(4, 40));
  EXPECT_EQ(old.entries()[3]->name, "old3");
  // The first save goes to the second half: torn there, the old copy still loads.
  Area saved = area;
  Catalog moved = catalog_of(4, 900);
  save(moved, saved);
  EXPECT_EQ(roots_of(Catalog::load(saved)), roots(4, 900));
  Area torn = saved;
  torn[kArea / 2 + 100] = area[kArea / 2 + 100] ^ std::byte{0xff};
  EXPECT_EQ(roots_of(Catalog::load(torn)), roots(4, 40));
  // More tables than a copy now holds: refused with a clear error, not misread.
  EXPECT_THROW(Catalog::load(single_copy_area(Catalog::capacity(kArea) + 1)), Error);
  EXPECT_EQ(Catalog::capacity(kArea), 15u);
}

}  // namespace
}  // namespace tristore
