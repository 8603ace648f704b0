#include "emulation/crash_simulator.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "common/error.hpp"
#include "emulation/nvm_device.hpp"
#include "tests/test_support.hpp"

namespace tristore {
namespace {

using testing_support::test_seed;

std::uint64_t word_at(const std::byte* base, std::uint64_t offset) {
  std::uint64_t value;
  std::memcpy(&value, base + offset, 8);
  return value;
}

class CrashSimulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("device.nvm");
    NvmDeviceOptions options;
    options.path = path_;
    options.size_bytes = 256 << 10;
    options.create = true;
    options.crash_simulation = true;
    device_ = std::make_unique<NvmDevice>(options);
    crash_ = device_->crash_simulator();
    ASSERT_NE(crash_, nullptr);
  }
  void TearDown() override { device_.reset(); }

  void store(std::uint64_t offset, std::uint64_t value) {
    std::memcpy(device_->base() + offset, &value, 8);
  }

  testing_support::TempDir dir_{testing_support::kNvmBase};
  std::string path_;
  std::unique_ptr<NvmDevice> device_;
  CrashSimulator* crash_ = nullptr;
};

TEST_F(CrashSimulatorTest, FlushedAndFencedDataSurvivesEveryCrash) {
  std::mt19937_64 random(test_seed());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> persisted;
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t offset = (random() % (device_->size() / 16)) / 8 * 8 * 2;  // even words
    const std::uint64_t value = random() | 1;
    store(offset, value);
    device_->persist(device_->base() + offset, 8);
    persisted.emplace_back(offset, value);
  }
  // Unpersisted noise in the odd words around them.
  for (int i = 0; i < 2000; ++i) store((random() % (device_->size() / 16)) * 16 + 8, random());
  std::map<std::uint64_t, std::uint64_t> expected(persisted.begin(), persisted.end());
  for (const auto& [offset, value] : persisted) expected[offset] = value;  // last write wins
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const std::vector<std::byte> image = crash_->crash_image(seed);
    for (const auto& [offset, value] : expected)
      ASSERT_EQ(word_at(image.data(), offset), value) << "seed " << seed << " offset " << offset;
  }
}

TEST_F(CrashSimulatorTest, UnflushedDataSurvivesSomeCrashesAndNotOthers) {
  store(4096, 0xDEADBEEF);
  const std::uint64_t base_seed = test_seed();
  int survived = 0;
  const int trials = 200;
  for (int i = 0; i < trials; ++i) {
    const std::uint64_t value = word_at(crash_->crash_image(base_seed + i).data(), 4096);
    ASSERT_TRUE(value == 0 || value == 0xDEADBEEF) << "a word is either old or new, never mixed";
    survived += value == 0xDEADBEEF ? 1 : 0;
  }
  EXPECT_GT(survived, 0);
  EXPECT_LT(survived, trials);
}

TEST_F(CrashSimulatorTest, UnflushedLineTearsAtEightByteGranularity) {
  for (std::uint64_t word = 0; word < 8; ++word) store(8192 + word * 8, ~std::uint64_t{0});
  bool saw_torn_line = false;
  for (std::uint64_t seed = 0; seed < 50 && !saw_torn_line; ++seed) {
    const std::vector<std::byte> image = crash_->crash_image(seed);
    int new_words = 0;
    for (std::uint64_t word = 0; word < 8; ++word)
      new_words += word_at(image.data(), 8192 + word * 8) != 0 ? 1 : 0;
    saw_torn_line = new_words > 0 && new_words < 8;
  }
  EXPECT_TRUE(saw_torn_line);
}

TEST_F(CrashSimulatorTest, FlushWithoutFenceIsNotDurable) {
  store(0, 77);
  device_->flush(device_->base(), 8);
  EXPECT_EQ(word_at(crash_->durable_image().data(), 0), 0u);
  device_->fence();
  EXPECT_EQ(word_at(crash_->durable_image().data(), 0), 77u);
  EXPECT_EQ(crash_->fences(), 1u);
}

TEST_F(CrashSimulatorTest, FlushCapturesTheLineAsItWasAtFlushTime) {
  store(0, 1);
  device_->flush(device_->base(), 8);
  store(0, 2);  // after the flush: not covered by it
  device_->fence();
  EXPECT_EQ(word_at(crash_->durable_image().data(), 0), 1u);
}

TEST_F(CrashSimulatorTest, ArmedFenceThrowsBeforeAnythingBecomesDurable) {
  crash_->arm_crash_at_fence(2);
  store(0, 11);
  device_->persist(device_->base(), 8);  // fence 1: durable
  store(64, 22);
  device_->flush(device_->base() + 64, 8);
  EXPECT_THROW(device_->fence(), SimulatedCrash);  // fence 2 crashes
  EXPECT_TRUE(crash_->crashed());
  EXPECT_EQ(word_at(crash_->durable_image().data(), 0), 11u);
  EXPECT_EQ(word_at(crash_->durable_image().data(), 64), 0u);

  // After the crash the machine is down: later stores and fences change no crash image.
  store(128, 33);
  device_->persist(device_->base() + 128, 8);
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<std::byte> image = crash_->crash_image(seed);
    EXPECT_EQ(word_at(image.data(), 0), 11u);
    EXPECT_EQ(word_at(image.data(), 128), 0u);
  }
}

TEST_F(CrashSimulatorTest, DisarmedFenceDoesNotCrash) {
  crash_->arm_crash_at_fence(1);
  crash_->disarm();
  EXPECT_NO_THROW(device_->fence());
  EXPECT_FALSE(crash_->crashed());
  EXPECT_THROW(crash_->arm_crash_at_fence(0), Error);
}

TEST_F(CrashSimulatorTest, SameSeedGivesTheSameImage) {
  for (int i = 0; i < 100; ++i) store(i * 72 / 8 * 8, 1000 + i);
  EXPECT_EQ(crash_->crash_image(5), crash_->crash_image(5));
  EXPECT_NE(crash_->crash_image(5), crash_->crash_image(6));
}

TEST_F(CrashSimulatorTest, CrashImageFileReopensAsADevice) {
  store(0, 5);
  device_->persist(device_->base(), 8);
  store(8, 6);
  const std::string image_path = path_ + ".crash";
  crash_->write_crash_image(3, image_path);
  NvmDeviceOptions options;
  options.path = image_path;
  NvmDevice reopened(options);
  ASSERT_EQ(reopened.size(), device_->size());
  const std::vector<std::byte> image = crash_->crash_image(3);
  EXPECT_EQ(std::memcmp(reopened.base(), image.data(), image.size()), 0);
  EXPECT_EQ(word_at(reopened.base(), 0), 5u);
}

}  // namespace
}  // namespace tristore
