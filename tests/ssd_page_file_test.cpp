#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "common/page_format.hpp"
#include "ssd/page_checksum.hpp"
#include "ssd/ssd_layout.hpp"
#include "ssd/ssd_page_file.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::error_of;
using testing_support::TempDir;

namespace {

constexpr std::uint64_t kSmallSize = 64 * kPageSize;

SsdOptions options_for(const std::filesystem::path& file, std::uint64_t size = kSmallSize) {
  SsdOptions options;
  options.path = file.string();
  options.size_bytes = size;
  options.create = true;
  return options;
}

std::vector<std::byte> random_page(std::mt19937_64& random) {
  std::vector<std::byte> page(kPageSize);
  for (auto& b : page) b = static_cast<std::byte>(random());
  return page;
}

// The page as the SSD tier returns it: header stamped with id and checksum.
std::vector<std::byte> stamped(std::vector<std::byte> page, PageId id) {
  PageHeader header;
  std::memcpy(&header, page.data(), sizeof(header));
  header.page_id = id;
  header.checksum = 0;
  std::memcpy(page.data(), &header, sizeof(header));
  header.checksum = page_checksum(page.data());
  std::memcpy(page.data(), &header, sizeof(header));
  return page;
}

}  // namespace

TEST(SsdPageFile, CreateComputesCapacityFromSize) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  EXPECT_EQ(file->page_capacity(), 64u - 3u);  // superblock + two one-page bitmaps
  EXPECT_EQ(file->pages_in_use(), 0u);
  EXPECT_NE(file->database_id(), 0u);
  EXPECT_EQ(std::filesystem::file_size(dir.path / "a.ssd"), 64 * kPageSize);
}

TEST(SsdPageFile, WrittenPagesReadBackIdenticallyWithStampedHeader) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  std::mt19937_64 random(42);
  std::vector<std::vector<std::byte>> pages;
  for (int i = 0; i < 10; ++i) {
    PageId id = file->allocate();
    ASSERT_EQ(id, static_cast<PageId>(i));
    pages.push_back(random_page(random));
    auto before = pages.back();
    file->write(id, pages.back().data());
    EXPECT_EQ(pages.back(), before) << "write must not modify the caller's bytes";
  }
  alignas(4096) std::byte buffer[kPageSize];
  for (PageId id = 0; id < 10; ++id) {
    file->read(id, buffer);
    auto expected = stamped(pages[id], id);
    ASSERT_EQ(std::memcmp(buffer, expected.data(), kPageSize), 0) << "page " << id;
  }
}

TEST(SsdPageFile, ReadAndWriteWorkWithUnalignedBuffers) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  std::mt19937_64 random(7);
  auto page = random_page(random);
  std::vector<std::byte> storage(kPageSize + 4096 + 1);
  auto* aligned = reinterpret_cast<std::byte*>(
      (reinterpret_cast<std::uintptr_t>(storage.data()) + 4095) & ~std::uintptr_t{4095});
  std::byte* unaligned = aligned + 1;
  std::memcpy(unaligned, page.data(), kPageSize);
  PageId id = file->allocate();
  file->write(id, unaligned);
  std::memset(unaligned, 0, kPageSize);
  file->read(id, unaligned);
  auto expected = stamped(page, id);
  EXPECT_EQ(std::memcmp(unaligned, expected.data(), kPageSize), 0);
}

TEST(SsdPageFile, OverwriteReplacesContent) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  std::mt19937_64 random(3);
  PageId id = file->allocate();
  file->write(id, random_page(random).data());
  auto second = random_page(random);
  file->write(id, second.data());
  std::vector<std::byte> buffer(kPageSize);
  file->read(id, buffer.data());
  EXPECT_EQ(buffer, stamped(second, id));
}

TEST(SsdPageFile, AllocateReturnsLowestFreePage) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  for (PageId expected = 0; expected < 5; ++expected) EXPECT_EQ(file->allocate(), expected);
  file->free(3);
  file->free(1);
  EXPECT_FALSE(file->is_allocated(1));
  EXPECT_TRUE(file->is_allocated(2));
  EXPECT_EQ(file->pages_in_use(), 3u);
  EXPECT_EQ(file->allocate(), 1u);
  EXPECT_EQ(file->allocate(), 3u);
  EXPECT_EQ(file->allocate(), 5u);
}

TEST(SsdPageFile, FullFileThrowsSsdFullWithPageCount) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd", 8 * kPageSize));
  ASSERT_EQ(file->page_capacity(), 5u);
  for (int i = 0; i < 5; ++i) file->allocate();
  EXPECT_EQ(error_of([&] { file->allocate(); }), "SSD full (5 pages) in " + file->path());
  file->free(2);
  EXPECT_EQ(file->allocate(), 2u);
}

TEST(SsdPageFile, AllocationAndDataSurviveReopenAfterSync) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd");
  std::mt19937_64 random(11);
  auto page = random_page(random);
  std::uint64_t database_id;
  {
    auto file = SsdPageFile::create(options);
    database_id = file->database_id();
    for (int i = 0; i < 6; ++i) file->allocate();
    file->free(4);
    file->write(5, page.data());
    file->sync();
  }
  options.create = false;
  auto file = SsdPageFile::open(options);
  EXPECT_EQ(file->database_id(), database_id);
  EXPECT_EQ(file->pages_in_use(), 5u);
  EXPECT_FALSE(file->is_allocated(4));
  EXPECT_TRUE(file->is_allocated(5));
  EXPECT_FALSE(file->is_allocated(6));
  std::vector<std::byte> buffer(kPageSize);
  file->read(5, buffer.data());
  EXPECT_EQ(buffer, stamped(page, 5));
  EXPECT_EQ(file->allocate(), 4u);
}

TEST(SsdPageFile, ManySyncsAlternateCopiesAndKeepTheLatestState) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd");
  {
    auto file = SsdPageFile::create(options);
    for (int i = 0; i < 7; ++i) {
      file->allocate();
      file->metadata()[0] = static_cast<std::byte>(i);
      file->sync();
    }
  }
  options.create = false;
  auto file = SsdPageFile::open(options);
  EXPECT_EQ(file->pages_in_use(), 7u);
  EXPECT_EQ(file->metadata()[0], std::byte{6});
}

TEST(SsdPageFile, AllocationWithoutSyncIsNotDurable) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd");
  {
    auto file = SsdPageFile::create(options);
    file->allocate();
    file->sync();
    file->allocate();
  }
  options.create = false;
  auto file = SsdPageFile::open(options);
  EXPECT_EQ(file->pages_in_use(), 1u);
}

TEST(SsdPageFile, ClaimsOfNewPagesAreDurableWithTheAllocationsUntilConfirmed) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd");
  auto reopened = [&] {
    options.create = false;
    return SsdPageFile::open(options);
  };
  {
    auto file = SsdPageFile::create(options);
    for (int i = 0; i < 4; ++i) file->allocate();  // pages 0..3, claimed
    file->free(2);                                 // a free ends its claim
    EXPECT_EQ(file->claimed_pages(), (std::vector<PageId>{0, 1, 3}));
    file->sync();
  }
  {
    auto file = reopened();
    EXPECT_EQ(file->claimed_pages(), (std::vector<PageId>{0, 1, 3}));
    file->confirm_claims();  // the metadata saved now keeps them
    EXPECT_EQ(file->allocate(), 2u);
    EXPECT_EQ(file->claimed_pages(), (std::vector<PageId>{2}));
    file->sync();
  }
  {
    auto file = reopened();
    EXPECT_EQ(file->claimed_pages(), (std::vector<PageId>{2}));
    EXPECT_EQ(file->pages_in_use(), 4u);
    file->claim_at_next_confirm(1);
    EXPECT_EQ(file->claimed_pages(), (std::vector<PageId>{2}));
    file->confirm_claims();  // page 1 is claimed again: the metadata saved now drops it
    EXPECT_EQ(file->claimed_pages(), (std::vector<PageId>{1}));
    file->sync();
    file->confirm_claims();
    // Not synced: the durable claims stay those of the sync before.
  }
  EXPECT_EQ(reopened()->claimed_pages(), (std::vector<PageId>{1}));
}

TEST(SsdPageFile, MetadataSurvivesReopenAfterSync) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd");
  {
    auto file = SsdPageFile::create(options);
    ASSERT_EQ(file->metadata().size(), SsdPageFile::kMetadataSize);
    for (std::size_t i = 0; i < file->metadata().size(); ++i)
      file->metadata()[i] = static_cast<std::byte>(i * 7);
    file->sync();
  }
  options.create = false;
  auto file = SsdPageFile::open(options);
  for (std::size_t i = 0; i < file->metadata().size(); ++i)
    ASSERT_EQ(file->metadata()[i], static_cast<std::byte>(i * 7)) << i;
}

TEST(SsdPageFile, OutOfRangeIdsAreRefusedWithClearError) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  std::vector<std::byte> buffer(kPageSize);
  PageId beyond = file->page_capacity();
  EXPECT_EQ(error_of([&] { file->read(beyond, buffer.data()); }),
            "read of SSD page 61 out of range: " + file->path() + " holds 61 pages");
  EXPECT_NE(error_of([&] { file->write(kInvalidPageId, buffer.data()); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of([&] { file->free(beyond); }).find("out of range"), std::string::npos);
  EXPECT_FALSE(file->is_allocated(beyond));
}

TEST(SsdPageFile, UnallocatedPagesAndNullBuffersAreRefused) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  std::vector<std::byte> buffer(kPageSize);
  EXPECT_NE(error_of([&] { file->read(0, buffer.data()); }).find("not allocated"),
            std::string::npos);
  EXPECT_NE(error_of([&] { file->write(0, buffer.data()); }).find("not allocated"),
            std::string::npos);
  PageId id = file->allocate();
  file->free(id);
  EXPECT_NE(error_of([&] { file->free(id); }).find("not allocated"), std::string::npos);
  id = file->allocate();
  EXPECT_NE(error_of([&] { file->read(id, nullptr); }).find("null buffer"), std::string::npos);
  EXPECT_NE(error_of([&] { file->write(id, nullptr); }).find("null buffer"), std::string::npos);
}

TEST(SsdPageFile, ShortReadOfTruncatedFileIsAnError) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  std::vector<std::byte> buffer(kPageSize);
  PageId last = 0;
  for (PageId i = 0; i < file->page_capacity(); ++i) last = file->allocate();
  file->write(last, buffer.data());
  // Someone else cuts the file under us.
  ASSERT_EQ(::truncate(file->path().c_str(), static_cast<off_t>(63 * kPageSize + 8192)), 0);
  EXPECT_NE(error_of([&] { file->read(last, buffer.data()); }).find("short read"),
            std::string::npos);
}

TEST(SsdPageFile, CountersCountPageReadsAndWrites) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd"));
  std::vector<std::byte> buffer(kPageSize);
  PageId id = file->allocate();
  for (int i = 0; i < 3; ++i) file->write(id, buffer.data());
  for (int i = 0; i < 5; ++i) file->read(id, buffer.data());
  EXPECT_EQ(file->counters().ssd_pages_written, 3u);
  EXPECT_EQ(file->counters().ssd_pages_read, 5u);
  EXPECT_EQ(file->counters().nvm_lines_read, 0u);
}

TEST(SsdPageFile, UsesDirectIoOnExt4AndFallsBackOnTmpfs) {
  TempDir disk("/tmp");
  struct statfs info {};
  ASSERT_EQ(::statfs(disk.path.c_str(), &info), 0);
  constexpr long kExt4Magic = 0xEF53;
  if (info.f_type == kExt4Magic) {
    EXPECT_TRUE(SsdPageFile::create(options_for(disk.path / "a.ssd"))->direct_io());
  }
  // tmpfs takes O_DIRECT only on newer kernels (6.6+); where it refuses, I/O is buffered.
  TempDir memory("/dev/shm");
  std::string probe_path = (memory.path / "probe").string();
  int probe = ::open(probe_path.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
  bool tmpfs_takes_direct_io = probe >= 0;
  if (probe >= 0) ::close(probe);
  auto file = SsdPageFile::create(options_for(memory.path / "a.ssd"));
  EXPECT_EQ(file->direct_io(), tmpfs_takes_direct_io);
  std::vector<std::byte> page(kPageSize, std::byte{5}), buffer(kPageSize);
  PageId id = file->allocate();
  file->write(id, page.data());
  file->read(id, buffer.data());
  EXPECT_EQ(buffer, stamped(page, id));
}

TEST(SsdPageFile, SecondOpenOfAFileInUseIsRefused) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd");
  auto file = SsdPageFile::create(options);
  options.create = false;
  EXPECT_NE(error_of([&] { SsdPageFile::open(options); }).find("in use"), std::string::npos);
  options.create = true;
  EXPECT_NE(error_of([&] { SsdPageFile::create(options); }).find("in use"), std::string::npos);
  file.reset();
  options.create = false;
  EXPECT_NO_THROW(SsdPageFile::open(options));
}

TEST(SsdPageFile, CreateTruncatesAnExistingFile) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd");
  {
    auto file = SsdPageFile::create(options);
    file->allocate();
    file->sync();
  }
  options.size_bytes = 16 * kPageSize;
  auto file = SsdPageFile::create(options);
  EXPECT_EQ(file->pages_in_use(), 0u);
  EXPECT_EQ(file->page_capacity(), 13u);
  EXPECT_EQ(std::filesystem::file_size(dir.path / "a.ssd"), 16 * kPageSize);
}

TEST(SsdPageFile, ImpossibleCreateRequestsAreRefused) {
  TempDir dir;
  auto options = options_for(dir.path / "a.ssd", 0);
  EXPECT_NE(error_of([&] { SsdPageFile::create(options); }).find("too small"), std::string::npos);
  options.size_bytes = 3 * kPageSize + 100;
  EXPECT_NE(error_of([&] { SsdPageFile::create(options); }).find("too small"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "a.ssd"));
  options.size_bytes = std::uint64_t{1} << 62;
  EXPECT_NE(error_of([&] { SsdPageFile::create(options); }).find("cannot"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "a.ssd"));
  options = options_for(dir.path / "missing-dir" / "a.ssd");
  EXPECT_NE(error_of([&] { SsdPageFile::create(options); }).find("cannot open"), std::string::npos);
  options = options_for(dir.path);
  EXPECT_NE(error_of([&] { SsdPageFile::create(options); }).find("cannot open"), std::string::npos);
}

TEST(SsdPageFile, ConcurrentIoOnDistinctPagesIsConsistent) {
  TempDir dir;
  auto file = SsdPageFile::create(options_for(dir.path / "a.ssd", 256 * kPageSize));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::byte> page(kPageSize, static_cast<std::byte>(t + 1)), buffer(kPageSize);
      for (int i = 0; i < 20; ++i) {
        PageId id = file->allocate();
        file->write(id, page.data());
        file->read(id, buffer.data());
        if (std::memcmp(buffer.data() + kPageHeaderSize, page.data() + kPageHeaderSize,
                        kPageSize - kPageHeaderSize) != 0)
          ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(file->pages_in_use(), 80u);
  EXPECT_EQ(file->counters().ssd_pages_written, 80u);
  EXPECT_EQ(file->counters().ssd_pages_read, 80u);
}
