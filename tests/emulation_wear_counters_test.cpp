#include "emulation/wear_counters.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "emulation/nvm_device.hpp"

namespace tristore {
namespace {

TEST(EmulationWearCounters, RecordsPerLineAndSortsTheHistogramDescending) {
  WearCounters wear(8);
  wear.record(2, 3);  // lines 2, 3, 4
  wear.record(3, 1);
  wear.record(3, 1);
  wear.record(7, 1);
  EXPECT_EQ(wear.writes(2), 1u);
  EXPECT_EQ(wear.writes(3), 3u);
  EXPECT_EQ(wear.writes(0), 0u);
  EXPECT_EQ(wear.total(), 6u);
  const std::vector<std::uint64_t> expected{3, 1, 1, 1, 0, 0, 0, 0};
  EXPECT_EQ(wear.histogram(), expected);
  wear.reset();
  EXPECT_EQ(wear.total(), 0u);
}

TEST(EmulationWearCounters, DeviceCountsWritesPerLineOnlyWhenEnabled) {
  const std::string path = "/dev/shm/tristore-test-wear-" + std::to_string(::getpid()) + ".nvm";
  NvmDeviceOptions options;
  options.path = path;
  options.size_bytes = 64 << 10;
  options.create = true;
  {
    NvmDevice device(options);
    EXPECT_EQ(device.wear(), nullptr);
  }
  options.wear_counting = true;
  {
    NvmDevice device(options);
    ASSERT_NE(device.wear(), nullptr);
    EXPECT_EQ(device.wear()->lines(), 1024u);
    std::byte data[128] = {};
    for (int i = 0; i < 5; ++i) device.write(device.base() + 64, data, 128);  // lines 1, 2
    device.write(device.base() + 1000 * 64, data, 1);
    EXPECT_EQ(device.wear()->writes(1), 5u);
    EXPECT_EQ(device.wear()->writes(2), 5u);
    EXPECT_EQ(device.wear()->writes(1000), 1u);
    EXPECT_EQ(device.wear()->total(), 11u);
    EXPECT_EQ(device.wear()->histogram().front(), 5u);
    EXPECT_EQ(device.counters().nvm_lines_written, 11u);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tristore
