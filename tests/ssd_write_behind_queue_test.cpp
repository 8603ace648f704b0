// Writes behind the caller (ssd/write_behind_queue.hpp): queued pages read back newest first,
// a page's writes land in the order they came, drain and sync wait for them, a failed write
// stops the queue; and SsdPageFile::write_behind over a real file.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/page_format.hpp"
#include "ssd/ssd_page_file.hpp"
#include "ssd/write_behind_queue.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::error_of;
using testing_support::TempDir;

namespace {

// A page image that says which page and which version it is.
struct Image {
  PageId id;
  std::uint64_t version;
};

void fill_image(std::byte* page, PageId id, std::uint64_t version) {
  std::memset(page, static_cast<int>(version & 0xff), kPageSize);
  const Image image{id, version};
  std::memcpy(page + sizeof(PageHeader), &image, sizeof(image));
}

Image image_of(const std::byte* page) {
  Image image;
  std::memcpy(&image, page + sizeof(PageHeader), sizeof(image));
  return image;
}

// A device whose writes wait at a gate until the test opens it, and which records them.
class GatedDevice {
 public:
  void write(PageId id, const std::byte* page) {
    std::unique_lock lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
    if (id == failing_) fail("disk on fire at page {}", id);
    written_.push_back(image_of(page));
    written_.back().id = id;
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }
  void fail_page(PageId id) { failing_ = id; }
  std::vector<Image> written() {
    std::lock_guard lock(mutex_);
    return written_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
  PageId failing_ = kInvalidPageId;
  std::vector<Image> written_;
};

WriteBehindQueue::Write to(GatedDevice& device) {
  return [&device](PageId id, const std::byte* page) { device.write(id, page); };
}

void push(WriteBehindQueue& queue, PageId id, std::uint64_t version) {
  queue.push(id, [&](std::byte* page) { fill_image(page, id, version); });
}

std::uint64_t queued_version(const WriteBehindQueue& queue, PageId id) {
  std::vector<std::byte> page(kPageSize);
  if (!queue.copy_if_queued(id, page.data())) return 0;
  return image_of(page.data()).version;
}

TEST(WriteBehindQueue, QueuedPagesReadBackNewestFirst) {
  GatedDevice device;
  WriteBehindQueue queue(8, 2, to(device));
  push(queue, 7, 1);
  push(queue, 7, 2);
  push(queue, 8, 3);
  EXPECT_EQ(queued_version(queue, 7), 2u);
  EXPECT_EQ(queued_version(queue, 8), 3u);
  EXPECT_EQ(queued_version(queue, 9), 0u);
  EXPECT_TRUE(device.written().empty());
  device.open();
  queue.drain();
  EXPECT_EQ(queued_version(queue, 7), 0u);  // written: the file has it now
  const std::vector<Image> written = device.written();
  ASSERT_EQ(written.size(), 3u);
  std::vector<std::uint64_t> page7;
  for (const Image& image : written)
    if (image.id == 7) page7.push_back(image.version);
  EXPECT_EQ(page7, (std::vector<std::uint64_t>{1, 2}));
}

TEST(WriteBehindQueue, WritesOfOnePageLandInOrderWithManyWriters) {
  // Writers take random time per write, so later writes of other pages overtake earlier ones;
  // a page's own writes must still land oldest first, the newest last.
  const std::uint64_t seed = testing_support::test_seed();
  std::mutex mutex;
  std::map<PageId, std::uint64_t> last_landed;
  std::atomic<int> out_of_order{0};
  std::atomic<std::uint64_t> delay_draws{seed};
  WriteBehindQueue queue(16, 4, [&](PageId id, const std::byte* page) {
    std::mt19937_64 random(delay_draws.fetch_add(1));
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 200));
    std::lock_guard lock(mutex);
    const std::uint64_t version = image_of(page).version;
    if (last_landed[id] >= version) ++out_of_order;
    last_landed[id] = version;
  });
  std::mt19937_64 random(seed);
  std::map<PageId, std::uint64_t> last_pushed;
  for (std::uint64_t version = 1; version <= 2000; ++version) {
    const PageId id = random() % 12;
    push(queue, id, version);
    last_pushed[id] = version;
    // Still queued, it reads as this version; written, the older ones are written too.
    const std::uint64_t seen = queued_version(queue, id);
    EXPECT_TRUE(seen == version || seen == 0) << "page " << id << " read as version " << seen;
  }
  queue.drain();
  EXPECT_EQ(out_of_order.load(), 0);
  EXPECT_EQ(last_landed, last_pushed);
}

TEST(WriteBehindQueue, PagesPushedByManyThreadsAreAllWrittenInOrder) {
  // More pushers than writers and buffers: each page queued wakes one writer, and a writer
  // that finishes takes the next page itself, so a page queued while every writer is busy, or
  // held back behind an older write of its page, is written all the same (a lost wake-up
  // would leave drain waiting for ever). Each pusher owns its pages, so their order is known.
  const std::uint64_t seed = testing_support::test_seed();
  constexpr int kPushers = 4, kPushesEach = 1500;
  std::mutex mutex;
  std::map<PageId, std::uint64_t> last_landed;
  std::atomic<int> out_of_order{0};
  std::atomic<std::uint64_t> writes{0};
  WriteBehindQueue queue(6, 2, [&](PageId id, const std::byte* page) {
    if (writes.fetch_add(1) % 7 == 0) std::this_thread::yield();
    std::lock_guard lock(mutex);
    const std::uint64_t version = image_of(page).version;
    if (last_landed[id] >= version) ++out_of_order;
    last_landed[id] = version;
  });
  std::vector<std::map<PageId, std::uint64_t>> last_pushed(kPushers);
  std::vector<std::thread> pushers;
  for (int p = 0; p < kPushers; ++p)
    pushers.emplace_back([&, p] {
      std::mt19937_64 random(seed + p);
      for (std::uint64_t version = 1; version <= kPushesEach; ++version) {
        const PageId id = static_cast<PageId>(p * 10 + random() % 3);
        push(queue, id, version);
        last_pushed[p][id] = version;
      }
    });
  for (std::thread& pusher : pushers) pusher.join();
  queue.drain();
  std::map<PageId, std::uint64_t> expected;
  for (const auto& pushed : last_pushed) expected.insert(pushed.begin(), pushed.end());
  EXPECT_EQ(writes.load(), std::uint64_t{kPushers} * kPushesEach);
  EXPECT_EQ(out_of_order.load(), 0);
  EXPECT_EQ(last_landed, expected);
}

TEST(WriteBehindQueue, PushWaitsForAFreeBuffer) {
  GatedDevice device;
  WriteBehindQueue queue(2, 1, to(device));
  push(queue, 1, 1);
  push(queue, 2, 2);
  std::atomic<bool> returned{false};
  bool waited = false;
  std::thread third([&] {
    waited = queue.push(3, [&](std::byte* page) { fill_image(page, 3, 3); });
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "a push with every buffer queued must wait";
  device.open();
  third.join();
  EXPECT_TRUE(waited);
  queue.drain();
  EXPECT_EQ(device.written().size(), 3u);
}

TEST(WriteBehindQueue, DrainAndWaitUntilWrittenWaitForTheWrites) {
  GatedDevice device;
  WriteBehindQueue queue(4, 2, to(device));
  push(queue, 1, 1);
  push(queue, 2, 2);
  std::atomic<bool> page2_written{false}, drained{false};
  std::thread waiter([&] {
    queue.wait_until_written(2);
    page2_written = true;
    queue.drain();
    drained = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(page2_written.load());
  EXPECT_FALSE(drained.load());
  device.open();
  waiter.join();
  EXPECT_EQ(device.written().size(), 2u);
  queue.wait_until_written(99);  // never queued: returns at once
}

TEST(WriteBehindQueue, AFailedWriteStopsTheQueueAndKeepsItsPage) {
  GatedDevice device;
  device.fail_page(5);
  WriteBehindQueue queue(8, 1, to(device));
  push(queue, 4, 1);
  push(queue, 5, 2);
  push(queue, 6, 3);
  device.open();
  const std::string error = error_of([&] { queue.drain(); });
  EXPECT_NE(error.find("disk on fire at page 5"), std::string::npos) << error;
  EXPECT_EQ(queued_version(queue, 5), 2u) << "the page that failed stays readable";
  EXPECT_EQ(queued_version(queue, 6), 3u) << "nothing after it is written";
  EXPECT_NE(error_of([&] { push(queue, 7, 4); }).find("disk on fire"), std::string::npos);
  EXPECT_NE(error_of([&] { queue.wait_until_written(6); }).find("disk on fire"), std::string::npos);
  ASSERT_EQ(device.written().size(), 1u);
  EXPECT_EQ(device.written()[0].id, 4u);
}

// SsdPageFile::write_behind over a real file: each write takes 300 ms (emulated latency), so
// the page is still queued when it is read or written again.
SsdOptions slow_file(const TempDir& dir) {
  SsdOptions options;
  options.path = dir.file("db.ssd");
  options.size_bytes = 64 * kPageSize;
  options.create = true;
  options.write_latency_ns = 300'000'000;
  return options;
}

// The version page 0 holds in the file, read after reopening it.
std::uint64_t version_on_disk(SsdOptions options) {
  options.create = false;
  options.write_latency_ns = 0;
  auto reopened = SsdPageFile::open(options);
  std::vector<std::byte> read(kPageSize);
  reopened->read(0, read.data());
  EXPECT_EQ(reopened->counters().ssd_pages_read, 1u) << "read from the disk, not a queue";
  return image_of(read.data()).version;
}

TEST(SsdWriteBehind, AReadGetsAPageStillQueuedAndSyncMakesItDurable) {
  TempDir dir(testing_support::kSsdBase, "write-behind-read");
  SsdOptions options = slow_file(dir);
  {
    auto file = SsdPageFile::create(options);
    const PageId id = file->allocate();
    std::vector<std::byte> page(kPageSize), read(kPageSize);
    fill_image(page.data(), id, 41);
    file->write_behind(id, page.data());
    file->read(id, read.data());
    EXPECT_EQ(image_of(read.data()).version, 41u);
    EXPECT_EQ(file->counters().ssd_reads_queued, 1u);
    EXPECT_EQ(file->counters().ssd_pages_read, 0u);
    file->sync();
  }
  EXPECT_EQ(version_on_disk(options), 41u);
}

TEST(SsdWriteBehind, AWriteAfterAWriteBehindOfThePageLandsLast) {
  TempDir dir(testing_support::kSsdBase, "write-behind-order");
  SsdOptions options = slow_file(dir);
  {
    auto file = SsdPageFile::create(options);
    const PageId id = file->allocate();
    std::vector<std::byte> page(kPageSize);
    fill_image(page.data(), id, 1);
    file->write_behind(id, page.data());
    fill_image(page.data(), id, 2);
    file->write(id, page.data());  // must not land before the queued version 1
    file->sync();
  }
  EXPECT_EQ(version_on_disk(options), 2u);
}

}  // namespace
