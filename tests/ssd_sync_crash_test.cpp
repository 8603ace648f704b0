// A process killed with SIGKILL at a random moment while allocating, writing and syncing leaves
// a file that reopens at (at least) the last completed sync(), with every synced page intact.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "ssd/ssd_page_file.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::TempDir;
using testing_support::test_seed;

namespace {

std::uint64_t synced_count(const SsdPageFile& file) {
  std::uint64_t count;
  std::memcpy(&count, file.metadata().data(), sizeof(count));
  return count;
}

// Each round appends one page whose every byte is its round number, then syncs and reports.
[[noreturn]] void run_child(const SsdOptions& options, int report_fd) {
  auto file = SsdPageFile::open(options);
  std::vector<std::byte> page(kPageSize);
  for (std::uint64_t round = synced_count(*file);; ++round) {
    PageId id = file->allocate();
    if (id != round) std::_Exit(3);
    std::memset(page.data(), static_cast<int>(round & 0xFF), kPageSize);
    file->write(id, page.data());
    std::uint64_t count = round + 1;
    std::memcpy(file->metadata().data(), &count, sizeof(count));
    file->sync();
    if (::write(report_fd, &count, sizeof(count)) != sizeof(count)) std::_Exit(4);
  }
}

}  // namespace

TEST(SsdSyncCrash, KilledWriterReopensAtLastSyncOrLater) {
  TempDir dir;
  std::mt19937_64 random(test_seed());
  SsdOptions options;
  options.path = (dir.path / "a.ssd").string();
  options.size_bytes = 1024 * kPageSize;
  options.create = true;
  SsdPageFile::create(options);
  options.create = false;

  std::uint64_t last_reported = 0;
  for (int crash = 0; crash < 6; ++crash) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      try {
        run_child(options, pipe_fds[1]);
      } catch (...) {
        std::_Exit(2);
      }
    }
    ::close(pipe_fds[1]);
    // Let it finish a few syncs, then kill it wherever it is.
    std::uint64_t count;
    for (int i = 0; i < 2; ++i)
      if (::read(pipe_fds[0], &count, sizeof(count)) == sizeof(count)) last_reported = count;
    ::usleep(static_cast<useconds_t>(random() % 20000));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(testing_support::killed_by_sigkill(status))
        << "the child ended on its own: " << testing_support::how_child_ended(status);
    while (::read(pipe_fds[0], &count, sizeof(count)) == sizeof(count)) last_reported = count;
    ::close(pipe_fds[0]);

    auto file = SsdPageFile::open(options);
    std::uint64_t synced = synced_count(*file);
    EXPECT_GE(synced, last_reported) << "a completed sync was lost";
    EXPECT_LE(synced, last_reported + 1);
    ASSERT_EQ(file->pages_in_use(), synced);
    std::vector<std::byte> page(kPageSize);
    for (PageId id = 0; id < synced; ++id) {
      file->read(id, page.data());
      ASSERT_EQ(page[kPageSize - 1], static_cast<std::byte>(id & 0xFF)) << "page " << id;
    }
    last_reported = synced;
  }
}
