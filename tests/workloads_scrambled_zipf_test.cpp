#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/test_support.hpp"
#include "workloads/fnv_hash.hpp"
#include "workloads/random.hpp"
#include "workloads/scrambled_zipf_generator.hpp"

using namespace tristore;

namespace {
// One known seed by default: the assertions are statistical.
std::uint64_t test_seed() { return testing_support::test_seed(20180610); }
}  // namespace

TEST(WorkloadsScrambledZipf, ZetaOfTwoMatchesYcsb) {
  EXPECT_DOUBLE_EQ(zeta(2, 0.99), 1.5034777750283594);
  EXPECT_DOUBLE_EQ(zeta(1, 0.99), 1.0);
  EXPECT_NEAR(zeta(1000, 1.0), 7.485470860550345, 1e-12);  // the harmonic number H(1000)
}

TEST(WorkloadsScrambledZipf, FnvHashGivesYcsbKeyNames) {
  EXPECT_EQ("user" + std::to_string(fnv_hash64(0)), "user6284781860667377211");
  EXPECT_EQ("user" + std::to_string(fnv_hash64(1)), "user8517097267634966620");
  EXPECT_EQ("user" + std::to_string(fnv_hash64(2)), "user1820151046732198393");
}

TEST(WorkloadsScrambledZipf, FnvHashIsNonNegativeForSmallInputs) {
  for (std::int64_t v = -1000; v < 1000; ++v) EXPECT_GE(fnv_hash64(v), 0) << v;
}

TEST(WorkloadsScrambledZipf, ValuesStayInRange) {
  Random random(test_seed());
  for (std::uint64_t n : {1ULL, 7ULL, 1000ULL, 1ULL << 32}) {
    ScrambledZipfGenerator generator(n);
    for (int i = 0; i < 10'000; ++i) ASSERT_LT(generator.next(random), n);
  }
}

TEST(WorkloadsScrambledZipf, HottestItemsAreTheHashedTopRanks) {
  // Gray's generator gives item 0 probability 1/zeta(10^10) and item 1 0.5^0.99 times that;
  // scrambling moves them to fnv(0) % n and fnv(1) % n. With a million items, collisions add
  // about a millionth, far below the tolerance.
  constexpr std::uint64_t kItems = 1'000'000;
  constexpr int kDraws = 400'000;
  ScrambledZipfGenerator generator(kItems);
  Random random(test_seed());
  std::vector<std::uint32_t> counts(kItems);
  for (int i = 0; i < kDraws; ++i) ++counts[generator.next(random)];
  const double p0 = 1.0 / ScrambledZipfGenerator::kZetaItemCount;
  const double p1 = std::pow(0.5, 0.99) / ScrambledZipfGenerator::kZetaItemCount;
  EXPECT_NEAR(counts[fnv_hash64(0) % kItems] / (kDraws * p0), 1.0, 0.05);
  EXPECT_NEAR(counts[fnv_hash64(1) % kItems] / (kDraws * p1), 1.0, 0.05);
}

TEST(WorkloadsScrambledZipf, GrayGeneratorMatchesZipfOnSmallDomains) {
  // With the exact zeta, Gray's generator puts 1/zeta(n) on item 0 and 2^-theta/zeta(n) on 1.
  constexpr std::uint64_t kItems = 100;
  const double theta = 0.99;
  const double zeta_n = zeta(kItems, theta);
  GrayZipfianGenerator generator(kItems, theta, zeta_n);
  Random random(test_seed());
  constexpr int kDraws = 400'000;
  std::vector<int> counts(kItems);
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t item = generator.next(random);
    ASSERT_LT(item, kItems);
    ++counts[item];
  }
  EXPECT_NEAR(counts[0] / (kDraws / zeta_n), 1.0, 0.03);
  EXPECT_NEAR(counts[1] / (kDraws * std::pow(0.5, theta) / zeta_n), 1.0, 0.03);
}
