#include "emulation/nvm_device.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

class NvmDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/dev/shm/tristore-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".nvm";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  NvmDeviceOptions options(std::uint64_t size, bool create) const {
    NvmDeviceOptions o;
    o.path = path_;
    o.size_bytes = size;
    o.create = create;
    return o;
  }

  std::string path_;
};

TEST_F(NvmDeviceTest, CreatedRegionIsZeroedAndHasRequestedSize) {
  NvmDevice device(options(1 << 20, true));
  EXPECT_EQ(device.size(), 1u << 20);
  EXPECT_TRUE(device.contains(device.base()));
  EXPECT_TRUE(device.contains(device.base() + device.size() - 1));
  EXPECT_FALSE(device.contains(device.base() + device.size()));
  for (std::uint64_t i = 0; i < device.size(); i += 4096) ASSERT_EQ(device.base()[i], std::byte{0});
}

TEST_F(NvmDeviceTest, PersistedDataSurvivesCloseAndReopen) {
  {
    NvmDevice device(options(1 << 20, true));
    std::memcpy(device.base() + 12345, "tristore", 8);
    device.persist(device.base() + 12345, 8);
  }
  NvmDevice reopened(options(0, false));
  EXPECT_EQ(reopened.size(), 1u << 20);
  EXPECT_EQ(std::memcmp(reopened.base() + 12345, "tristore", 8), 0);
}

TEST_F(NvmDeviceTest, CreateTruncatesAnExistingFile) {
  {
    NvmDevice device(options(1 << 20, true));
    device.base()[100] = std::byte{42};
    device.persist(device.base() + 100, 1);
  }
  NvmDevice recreated(options(64 << 10, true));
  EXPECT_EQ(recreated.size(), 64u << 10);
  EXPECT_EQ(recreated.base()[100], std::byte{0});
}

TEST_F(NvmDeviceTest, PersistedDataSurvivesKillOfTheWritingProcess) {
  { NvmDevice device(options(1 << 20, true)); }
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    NvmDevice device(options(0, false));
    for (int i = 0; i < 1000; ++i) {
      const std::uint64_t value = 0xC0FFEE00u + i;
      std::memcpy(device.base() + i * 64, &value, 8);
      device.persist(device.base() + i * 64, 8);
    }
    char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(2);
    for (;;) ::pause();  // killed with SIGKILL while the mapping is still open
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(testing_support::killed_by_sigkill(status))
      << "the child ended on its own: " << testing_support::how_child_ended(status);

  NvmDevice reopened(options(0, false));
  for (int i = 0; i < 1000; ++i) {
    std::uint64_t value = 0;
    std::memcpy(&value, reopened.base() + i * 64, 8);
    ASSERT_EQ(value, 0xC0FFEE00u + i) << "line " << i;
  }
}

TEST_F(NvmDeviceTest, OpeningAMissingFileIsAnError) {
  try {
    NvmDevice device(options(0, false));
    FAIL() << "expected Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("does not exist"), std::string::npos) << error.what();
  }
}

// Two engines on one NVM file would overwrite each other's pages and log.
TEST_F(NvmDeviceTest, ASecondDeviceOnAnOpenFileIsAnErrorAndLeavesItUntouched) {
  auto error_of = [](const NvmDeviceOptions& o) -> std::string {
    try {
      NvmDevice device(o);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  };
  {
    NvmDevice device(options(1 << 20, true));
    device.base()[100] = std::byte{42};
    device.persist(device.base() + 100, 1);
    EXPECT_NE(error_of(options(0, false)).find("is already open"), std::string::npos);
    EXPECT_NE(error_of(options(1 << 20, true)).find("is already open"), std::string::npos)
        << "a create must not truncate an open file";
    EXPECT_EQ(device.base()[100], std::byte{42});
    EXPECT_EQ(device.size(), 1u << 20);
  }
  NvmDevice reopened(options(0, false));  // the lock went with the first device
  EXPECT_EQ(reopened.base()[100], std::byte{42});
}

TEST_F(NvmDeviceTest, ADeviceInAnotherProcessIsRefusedWhileThisOneIsOpen) {
  NvmDevice device(options(1 << 20, true));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit status 0: refused as already open; anything else: accepted or another failure.
    try {
      NvmDevice second(options(0, false));
    } catch (const Error& error) {
      ::_exit(std::string(error.what()).find("is already open") != std::string::npos ? 0 : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(NvmDeviceTest, OpeningWithAMismatchedSizeIsAnError) {
  { NvmDevice device(options(1 << 20, true)); }
  EXPECT_THROW(NvmDevice(options(2 << 20, false)), Error);
}

TEST_F(NvmDeviceTest, OpeningAnEmptyFileIsAnError) {
  std::ofstream(path_).close();
  EXPECT_THROW(NvmDevice(options(0, false)), Error);
}

TEST_F(NvmDeviceTest, CreatingWithSizeZeroIsAnError) {
  EXPECT_THROW(NvmDevice(options(0, true)), Error);
}

TEST_F(NvmDeviceTest, CreatingInAMissingDirectoryIsAnError) {
  NvmDeviceOptions o = options(1 << 20, true);
  o.path = "/dev/shm/tristore-no-such-dir-" + std::to_string(::getpid()) + "/x.nvm";
  EXPECT_THROW(NvmDevice device(o), Error);
}

TEST_F(NvmDeviceTest, NonexistentNumaNodeIsAClearError) {
  NvmDeviceOptions o = options(1 << 20, true);
  o.numa_node = 4000;
  try {
    NvmDevice device(o);
    FAIL() << "expected Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_TRUE(message.find("does not exist") != std::string::npos ||
                message.find("no NUMA support") != std::string::npos)
        << message;
  }
  std::ifstream file(path_);
  EXPECT_FALSE(file.good()) << "a bad NUMA node must be rejected before the file is created";
}

TEST_F(NvmDeviceTest, NumaNodeZeroBindsWhereNumaIsAvailable) {
  NvmDeviceOptions o = options(1 << 20, true);
  o.numa_node = 0;
  try {
    NvmDevice device(o);
    device.base()[0] = std::byte{1};
    EXPECT_EQ(device.base()[0], std::byte{1});
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("no NUMA support"), std::string::npos) << error.what();
  }
}

TEST_F(NvmDeviceTest, ChargesCountEveryTouchedLine) {
  NvmDevice device(options(1 << 20, true));
  std::vector<std::byte> buffer(256);
  device.read(buffer.data(), device.base() + 60, 10);  // straddles lines 0 and 1
  EXPECT_EQ(device.counters().nvm_lines_read, 2u);
  device.write(device.base() + 128, buffer.data(), 256);  // lines 2..5
  EXPECT_EQ(device.counters().nvm_lines_written, 4u);
  EXPECT_EQ(device.counters().llc_misses, 0u) << "latency 0: no LLC filter at all";
  EXPECT_EQ(device.llc(), nullptr);
}

TEST_F(NvmDeviceTest, RepeatedReadOfALineHitsTheSimulatedLlc) {
  NvmDeviceOptions o = options(1 << 20, true);
  o.read_ns = 300;
  o.llc_bytes = 64 << 10;
  NvmDevice device(o);
  std::byte buffer[64];
  device.read(buffer, device.base() + 4096, 64);
  EXPECT_EQ(device.counters().llc_misses, 1u);
  for (int i = 0; i < 10; ++i) device.read(buffer, device.base() + 4096, 64);
  EXPECT_EQ(device.counters().llc_misses, 1u);
  EXPECT_EQ(device.counters().nvm_lines_read, 11u);
}

TEST_F(NvmDeviceTest, WithoutTheLlcFilterEveryReadIsChargedAsAMiss) {
  NvmDeviceOptions o = options(1 << 20, true);
  o.read_ns = 1;
  o.llc_filter = false;
  NvmDevice device(o);
  for (int i = 0; i < 5; ++i) device.charge_read(device.base(), 128);
  EXPECT_EQ(device.counters().llc_misses, 10u);
  EXPECT_EQ(device.counters().nvm_lines_read, 10u);
}

TEST_F(NvmDeviceTest, LinesBeyondTheSimulatedLlcMissAgain) {
  NvmDeviceOptions o = options(4 << 20, true);
  o.read_ns = 1;
  o.llc_bytes = 64 << 10;  // 1024 lines
  NvmDevice device(o);
  // Sweep 1 MiB (16384 lines) twice: the second sweep misses just as much.
  for (std::uint64_t offset = 0; offset < (1 << 20); offset += 64)
    device.charge_read(device.base() + offset, 64);
  const std::uint64_t first_sweep = device.counters().llc_misses;
  EXPECT_EQ(first_sweep, 16384u);
  for (std::uint64_t offset = 0; offset < (1 << 20); offset += 64)
    device.charge_read(device.base() + offset, 64);
  EXPECT_EQ(device.counters().llc_misses, 2 * first_sweep);
}

TEST_F(NvmDeviceTest, AWrittenLineIsCachedForTheNextRead) {
  NvmDeviceOptions o = options(1 << 20, true);
  o.read_ns = 1;
  o.write_ns = 1;
  o.llc_bytes = 64 << 10;
  NvmDevice device(o);
  std::byte buffer[64] = {};
  device.write(device.base() + 640, buffer, 64);
  device.read(buffer, device.base() + 640, 64);
  EXPECT_EQ(device.counters().llc_misses, 0u);
}

// With latency injected, threads charge the one simulated LLC side by side: the log's appends
// (write_log) from every appender, reads and write-backs beside them. Each thread reads lines
// no one touched before, so each read is a miss, and writes log lines of its own between them.
TEST_F(NvmDeviceTest, ThreadsChargingTheSimulatedLlcSideBySideCountEveryMiss) {
  constexpr std::uint64_t kThreads = 4, kLines = 20000;
  NvmDeviceOptions o = options(2 * kThreads * kLines * 64, true);
  o.read_ns = 1;
  o.write_ns = 1;
  o.llc_bytes = 64 << 10;  // 64 sets of 16 ways: the threads' lines meet in every set
  NvmDevice device(o);
  std::vector<std::thread> threads;
  for (std::uint64_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&device, t] {
      std::byte* reads = device.base() + 2 * t * kLines * 64;
      std::byte* log = reads + kLines * 64;
      const std::byte line[64] = {};
      for (std::uint64_t i = 0; i < kLines; ++i) {
        device.charge_read(reads + i * 64, 64);
        device.write_log(log + i * 64, line, 64);
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(device.counters().llc_misses, kThreads * kLines);
  EXPECT_EQ(device.counters().nvm_lines_read, kThreads * kLines);
}

TEST_F(NvmDeviceTest, DefaultPathIsUnderDevShm) {
  EXPECT_EQ(default_nvm_path("x").rfind("/dev/shm/", 0), 0u);
}

}  // namespace
}  // namespace tristore

// One request's line misses overlap in batches of kMemoryLevelParallelism (line fill buffers):
// a single line costs one latency, a whole page ceil(256 / 10) of them.
TEST(EmulationNvmLatencyModel, MissesOfOneRequestOverlapInBatches) {
  using tristore::NvmDevice;
  EXPECT_EQ(NvmDevice::overlapped_latencies(0), 0u);
  EXPECT_EQ(NvmDevice::overlapped_latencies(1), 1u);
  EXPECT_EQ(NvmDevice::overlapped_latencies(NvmDevice::kMemoryLevelParallelism), 1u);
  EXPECT_EQ(NvmDevice::overlapped_latencies(NvmDevice::kMemoryLevelParallelism + 1), 2u);
  EXPECT_EQ(NvmDevice::overlapped_latencies(256), 26u);
}
