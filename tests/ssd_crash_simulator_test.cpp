// The SSD crash simulator: synced writes always survive; each unsynced write survives whole,
// not at all, or torn at 4 KiB sectors (never within a sector), the same for the same seed;
// nothing written or synced after the machine went down counts; an SsdPageFile reopens from
// every crash image, also one cut in the middle of sync(), with every synced page intact.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "emulation/crash_simulator.hpp"
#include "ssd/aligned_page_buffer.hpp"
#include "ssd/checksum_mismatch.hpp"
#include "ssd/direct_file.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::TempDir;
using testing_support::test_seed;

namespace {

constexpr std::size_t kSector = SsdCrashSimulator::kSectorSize;
constexpr int kSeeds = 200;

// A file of `sectors` sectors under simulation, each sector filled with its index + 1.
struct SimulatedFile {
  TempDir dir;
  DirectFile file;
  SsdCrashSimulator simulator;
  explicit SimulatedFile(std::size_t sectors)
      : file((dir.path / "f").string(), DirectFile::Mode::kCreate), simulator(file) {
    file.attach_crash_simulator(&simulator);
    file.reserve(sectors * kSector);
    for (std::size_t s = 0; s < sectors; ++s) write(s, 1, static_cast<std::uint8_t>(s + 1));
    file.sync_data();
  }
  void write(std::size_t first_sector, std::size_t count, std::uint8_t fill) {
    AlignedPageBuffer bytes(count * kSector);
    std::memset(bytes.data(), fill, count * kSector);
    file.write_exact(first_sector * kSector, bytes.data(), count * kSector);
  }
};

// The fill byte of a sector of an image, or -1 when the sector mixes bytes.
int sector_fill(const std::vector<std::byte>& image, std::size_t sector) {
  const std::byte* bytes = image.data() + sector * kSector;
  for (std::size_t i = 1; i < kSector; ++i)
    if (bytes[i] != bytes[0]) return -1;
  return static_cast<int>(bytes[0]);
}

TEST(SsdCrashSimulator, SyncedWritesSurviveEveryCrash) {
  const std::uint64_t seed = test_seed();
  SimulatedFile f(16);
  f.write(0, 4, 0xA0);
  f.file.sync_data();
  f.write(8, 8, 0xB0);  // unsynced: sectors 8..15 only
  for (int i = 0; i < kSeeds; ++i) {
    const std::vector<std::byte> image = f.simulator.crash_image(seed + i);
    ASSERT_EQ(image.size(), 16 * kSector);
    for (std::size_t s = 0; s < 4; ++s) EXPECT_EQ(sector_fill(image, s), 0xA0) << "sector " << s;
    for (std::size_t s = 4; s < 8; ++s) EXPECT_EQ(sector_fill(image, s), int(s + 1));
  }
  EXPECT_EQ(f.simulator.unsynced_writes(), 1u);
}

TEST(SsdCrashSimulator, UnsyncedWriteIsWholeDroppedOrTornBySector) {
  const std::uint64_t seed = test_seed();
  SimulatedFile f(8);
  f.write(0, 8, 0xCC);
  int whole = 0, dropped = 0, torn = 0;
  for (int i = 0; i < kSeeds; ++i) {
    const std::vector<std::byte> image = f.simulator.crash_image(seed + i);
    std::size_t kept = 0;
    for (std::size_t s = 0; s < 8; ++s) {
      const int fill = sector_fill(image, s);
      ASSERT_TRUE(fill == 0xCC || fill == int(s + 1)) << "sector " << s << " mixes old and new";
      kept += fill == 0xCC;
    }
    (kept == 8 ? whole : kept == 0 ? dropped : torn)++;
    EXPECT_EQ(image, f.simulator.crash_image(seed + i)) << "the same seed gives the same image";
  }
  std::printf("whole %d, dropped %d, torn %d of %d crashes\n", whole, dropped, torn, kSeeds);
  EXPECT_GT(whole, 0);
  EXPECT_GT(dropped, 0);
  EXPECT_GT(torn, 0);
}

TEST(SsdCrashSimulator, SectorWrittenTwiceEndsOldOrEitherVersion) {
  const std::uint64_t seed = test_seed();
  SimulatedFile f(2);
  f.write(1, 1, 0x11);
  f.write(1, 1, 0x22);
  std::set<int> seen;
  for (int i = 0; i < kSeeds; ++i) {
    const std::vector<std::byte> image = f.simulator.crash_image(seed + i);
    EXPECT_EQ(sector_fill(image, 0), 1);
    seen.insert(sector_fill(image, 1));
  }
  EXPECT_EQ(seen, (std::set<int>{2, 0x11, 0x22}));
}

TEST(SsdCrashSimulator, NothingCountsAfterTheMachineWentDown) {
  const std::uint64_t seed = test_seed();
  SimulatedFile f(4);
  bool down = false;
  f.simulator.set_machine_down_check([&] { return down; });
  f.write(0, 1, 0xAA);
  f.file.sync_data();
  f.write(1, 1, 0xBB);  // in the cache when the machine dies
  down = true;
  f.write(0, 1, 0xEE);
  f.write(2, 1, 0xEE);
  f.file.sync_data();
  down = false;  // latched: the machine stays down
  f.write(3, 1, 0xEE);
  f.file.sync_data();
  EXPECT_TRUE(f.simulator.frozen());
  EXPECT_EQ(f.simulator.unsynced_writes(), 1u);
  EXPECT_EQ(f.simulator.syncs(), 2u);
  for (int i = 0; i < kSeeds; ++i) {
    const std::vector<std::byte> image = f.simulator.crash_image(seed + i);
    EXPECT_EQ(sector_fill(image, 0), 0xAA);
    EXPECT_TRUE(sector_fill(image, 1) == 0xBB || sector_fill(image, 1) == 2);
    EXPECT_EQ(sector_fill(image, 2), 3);
    EXPECT_EQ(sector_fill(image, 3), 4);
  }
}

TEST(SsdCrashSimulator, FreezesWhenTheNvmCrashSimulatorFires) {
  std::vector<std::byte> nvm(4096);
  CrashSimulator nvm_crash(nvm.data(), nvm.size());
  SimulatedFile f(2);
  f.simulator.set_machine_down_check([&] { return nvm_crash.crashed(); });
  nvm_crash.arm_crash_at_fence(2);
  nvm_crash.on_fence();
  f.write(0, 1, 0x55);
  EXPECT_THROW(nvm_crash.on_fence(), SimulatedCrash);
  f.file.sync_data();
  EXPECT_TRUE(f.simulator.frozen());
  EXPECT_EQ(f.simulator.unsynced_writes(), 1u) << "the sync after the crash must not count";
}

// Pages 0..n-1 allocated, written with `fill` and synced; returns the file (still open).
std::unique_ptr<SsdPageFile> page_file(const TempDir& dir, std::uint64_t pages) {
  SsdOptions options;
  options.path = (dir.path / "p.ssd").string();
  options.size_bytes = 64 * kPageSize;
  options.create = true;
  options.crash_simulation = true;
  auto file = SsdPageFile::create(options);
  std::vector<std::byte> page(kPageSize);
  for (std::uint64_t i = 0; i < pages; ++i) {
    std::memset(page.data() + kPageHeaderSize, static_cast<int>(i + 1),
                kPageSize - kPageHeaderSize);
    file->write(file->allocate(), page.data());
  }
  file->sync();
  return file;
}

// Reopens an image: the synced pages hold their content; `unsynced` pages hold `fill`, their
// old content or fail their checksum (torn), never anything else.
void check_image(const std::string& path, std::uint64_t synced, std::uint64_t unsynced,
                 std::uint64_t allocated_min, int fill) {
  SsdOptions options;
  options.path = path;
  auto file = SsdPageFile::open(options);
  EXPECT_GE(file->pages_in_use(), allocated_min);
  std::vector<std::byte> page(kPageSize);
  for (PageId id = 0; id < synced; ++id) {
    file->read(id, page.data());
    EXPECT_EQ(page[kPageSize - 1], std::byte(id + 1)) << "synced page " << id;
  }
  for (PageId id = synced; id < synced + unsynced; ++id) {
    if (!file->is_allocated(id)) continue;
    try {
      file->read(id, page.data());
      EXPECT_TRUE(page[kPageSize - 1] == std::byte(fill) ||
                  page[kPageSize - 1] == std::byte(id + 1))
          << "unsynced page " << id;
    } catch (const ChecksumMismatch&) {
    }
  }
}

TEST(SsdCrashSimulator, PageFileReopensFromEveryCrashImage) {
  const std::uint64_t seed = test_seed();
  TempDir dir;
  auto file = page_file(dir, 8);
  SsdCrashSimulator& simulator = *file->crash_simulator();
  std::vector<std::byte> page(kPageSize, std::byte{0x77});
  for (PageId id = 4; id < 8; ++id) file->write(id, page.data());
  const std::string image = (dir.path / "image.ssd").string();
  int torn = 0;
  for (int i = 0; i < 50; ++i) {
    simulator.write_crash_image(seed + i, image);
    SCOPED_TRACE("image seed " + std::to_string(seed + i));
    check_image(image, 4, 4, 8, 0x77);
    SsdOptions options;
    options.path = image;
    auto reopened = SsdPageFile::open(options);
    for (PageId id = 4; id < 8; ++id) {
      try {
        reopened->read(id, page.data());
      } catch (const ChecksumMismatch&) {
        ++torn;
      }
    }
  }
  EXPECT_GT(torn, 0) << "some unsynced page writes must come out torn";
}

// After a page write, sync() writes a bitmap copy, syncs, writes a superblock copy and syncs:
// the machine goes down after each of these five steps in turn.
TEST(SsdCrashSimulator, PageFileSurvivesACrashInsideSync) {
  const std::uint64_t seed = test_seed();
  for (int counted = 0; counted <= 5; ++counted) {
    SCOPED_TRACE("machine down after " + std::to_string(counted) + " steps");
    TempDir dir;
    auto file = page_file(dir, 3);
    SsdCrashSimulator& simulator = *file->crash_simulator();
    simulator.set_machine_down_check([steps = 0, counted]() mutable { return steps++ >= counted; });
    std::vector<std::byte> page(kPageSize, std::byte{0x44});
    const PageId id = file->allocate();
    ASSERT_EQ(id, 3u);
    file->write(id, page.data());
    file->free(0);
    file->sync();
    const std::string image = (dir.path / "image.ssd").string();
    for (int i = 0; i < 20; ++i) {
      simulator.write_crash_image(seed + i, image);
      SsdOptions options;
      options.path = image;
      auto reopened = SsdPageFile::open(options);
      // The old generation (pages 0..2) or the new one (1..3), nothing in between.
      const bool new_generation = !reopened->is_allocated(0);
      EXPECT_EQ(reopened->is_allocated(3), new_generation);
      if (counted < 4) {
        EXPECT_FALSE(new_generation) << "the new superblock was never written";
      }
      if (counted == 5) {
        EXPECT_TRUE(new_generation) << "the new superblock was synced";
      }
      std::vector<std::byte> read(kPageSize);
      for (PageId p = 1; p < 3; ++p) {
        reopened->read(p, read.data());
        EXPECT_EQ(read[kPageSize - 1], std::byte(p + 1));
      }
      if (new_generation) {
        reopened->read(3, read.data());  // synced before the superblock that names it
        EXPECT_EQ(read[kPageSize - 1], std::byte{0x44});
      }
    }
  }
}

TEST(SsdCrashSimulator, OffByDefaultAndBadInputIsAnError) {
  TempDir dir;
  SsdOptions options;
  options.path = (dir.path / "plain.ssd").string();
  options.size_bytes = 8 * kPageSize;
  options.create = true;
  EXPECT_EQ(SsdPageFile::create(options)->crash_simulator(), nullptr);

  auto file = page_file(dir, 1);
  EXPECT_THROW(file->crash_simulator()->write_crash_image(1, "/nonexistent-dir/x.ssd"), Error);

  const std::string odd = (dir.path / "odd").string();
  std::FILE* raw = std::fopen(odd.c_str(), "wb");
  ASSERT_NE(raw, nullptr);
  std::fputs("not a whole sector", raw);
  std::fclose(raw);
  DirectFile odd_file(odd, DirectFile::Mode::kOpen);
  EXPECT_THROW(SsdCrashSimulator{odd_file}, Error);
}

}  // namespace
