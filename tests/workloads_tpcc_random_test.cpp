// TPC-C random inputs: NURand, its constants, last names, strings, the transaction mix.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tests/test_support.hpp"
#include "workloads/tpcc_inputs.hpp"
#include "workloads/tpcc_random.hpp"

namespace tristore::tpcc {
namespace {

// One known seed by default: the assertions are statistical.
std::uint64_t test_seed() { return testing_support::test_seed(20260421); }

TEST(TpccRandom, NuRandStaysWithinItsRangeAndReachesBothEnds) {
  TpccRandom random(test_seed());
  struct Case {
    std::uint32_t a, x, y;
  };
  for (const Case& c : {Case{255, 0, 999}, Case{1023, 1, 3000}, Case{8191, 1, 100000}}) {
    for (std::uint32_t constant : {0u, c.a / 3, c.a}) {
      std::uint32_t low = UINT32_MAX, high = 0;
      for (int i = 0; i < 200000; ++i) {
        const std::uint32_t v = random.nurand(c.a, c.x, c.y, constant);
        ASSERT_GE(v, c.x);
        ASSERT_LE(v, c.y);
        low = std::min(low, v);
        high = std::max(high, v);
      }
      EXPECT_LT(low, c.x + (c.y - c.x) / 100) << "A=" << c.a << " C=" << constant;
      EXPECT_GT(high, c.y - (c.y - c.x) / 100) << "A=" << c.a << " C=" << constant;
    }
  }
}

TEST(TpccRandom, NuRandIsSkewedUnlikeUniform) {
  // With C = 0, values whose low bits are all ones are hit far more often than others.
  TpccRandom random(test_seed());
  std::array<std::uint32_t, 1024> hits{};
  for (int i = 0; i < 1000000; ++i) ++hits[random.nurand(1023, 0, 1023, 0)];
  EXPECT_GT(hits[1023], 10 * hits[0]);
}

TEST(TpccRandom, UniformCoversInclusiveBounds) {
  TpccRandom random(test_seed());
  std::array<int, 6> hits{};
  for (int i = 0; i < 60000; ++i) {
    const std::uint32_t v = random.uniform(5, 10);
    ASSERT_GE(v, 5u);
    ASSERT_LE(v, 10u);
    ++hits[v - 5];
  }
  for (int h : hits) EXPECT_NEAR(h, 10000, 600);
}

TEST(TpccRandom, RunConstantForLastNamesKeepsTheRequiredDistanceFromTheLoadOne) {
  TpccRandom random(test_seed());
  for (int i = 0; i < 10000; ++i) {
    const NuRandConstants load = NuRandConstants::for_load(random);
    const NuRandConstants run = NuRandConstants::for_run(load, random);
    ASSERT_LE(load.c_last, 255u);
    ASSERT_LE(load.c_id, 1023u);
    ASSERT_LE(load.ol_i_id, 8191u);
    ASSERT_LE(run.c_last, 255u);
    ASSERT_LE(run.c_id, 1023u);
    ASSERT_LE(run.ol_i_id, 8191u);
    const int delta = std::abs(static_cast<int>(run.c_last) - static_cast<int>(load.c_last));
    ASSERT_GE(delta, 65);
    ASSERT_LE(delta, 119);
    ASSERT_NE(delta, 96);
    ASSERT_NE(delta, 112);
  }
  EXPECT_FALSE(NuRandConstants::valid_c_last_delta(100, 196));
  EXPECT_FALSE(NuRandConstants::valid_c_last_delta(120, 8));
  EXPECT_FALSE(NuRandConstants::valid_c_last_delta(0, 64));
  EXPECT_TRUE(NuRandConstants::valid_c_last_delta(0, 65));
  EXPECT_TRUE(NuRandConstants::valid_c_last_delta(200, 81));
}

TEST(TpccRandom, LastNamesAreThreeSyllablesByDigit) {
  char name[16];
  last_name(371, name);
  EXPECT_EQ(text_of(name), "PRICALLYOUGHT");
  last_name(0, name);
  EXPECT_EQ(text_of(name), "BARBARBAR");
  last_name(999, name);
  EXPECT_EQ(text_of(name), "EINGEINGEING");
  last_name(787, name);
  EXPECT_EQ(text_of(name), "CALLYATIONCALLY");  // the longest: 15 letters
}

TEST(TpccRandom, StringsHaveLengthsInRangeAndTheirAlphabet) {
  TpccRandom random(test_seed());
  for (int i = 0; i < 10000; ++i) {
    char a[24], n[16];
    const std::size_t a_length = random.a_string(a, 14, 24);
    ASSERT_GE(a_length, 14u);
    ASSERT_LE(a_length, 24u);
    for (std::size_t j = 0; j < a_length; ++j) ASSERT_TRUE(std::isalnum(a[j]));
    for (std::size_t j = a_length; j < sizeof(a); ++j) ASSERT_EQ(a[j], 0);
    ASSERT_EQ(random.n_string(n, 16, 16), 16u);
    for (char c : n) ASSERT_TRUE(std::isdigit(c));
  }
}

TEST(TpccInputs, MixFollowsTheStandardFrequencies) {
  TpccInputs inputs(4, {}, test_seed());
  constexpr int kDraws = 1000000;
  std::array<int, kTransactionTypes> count{};
  for (int i = 0; i < kDraws; ++i) ++count[static_cast<std::size_t>(inputs.next_type())];
  const std::array<double, kTransactionTypes> expected = {0.45, 0.43, 0.04, 0.04, 0.04};
  for (std::size_t t = 0; t < kTransactionTypes; ++t) {
    EXPECT_NEAR(static_cast<double>(count[t]) / kDraws, expected[t], 0.003) << "type " << t;
  }
}

TEST(TpccInputs, NewOrderInputsFollowClause241) {
  constexpr std::uint32_t kWarehouses = 5;
  TpccInputs inputs(kWarehouses, {}, test_seed());
  constexpr int kDraws = 200000;
  int rollbacks = 0, remote_lines = 0, lines = 0;
  std::array<int, kWarehouses + 1> home{};
  for (int i = 0; i < kDraws; ++i) {
    const NewOrderInput input = inputs.new_order();
    ASSERT_GE(input.w_id, 1u);
    ASSERT_LE(input.w_id, kWarehouses);
    ++home[input.w_id];
    ASSERT_GE(input.d_id, 1u);
    ASSERT_LE(input.d_id, kDistrictsPerWarehouse);
    ASSERT_GE(input.c_id, 1u);
    ASSERT_LE(input.c_id, kCustomersPerDistrict);
    ASSERT_GE(input.ol_cnt, kMinOrderLines);
    ASSERT_LE(input.ol_cnt, kMaxOrderLines);
    for (std::uint32_t l = 0; l < input.ol_cnt; ++l) {
      const NewOrderInput::Line& line = input.lines[l];
      if (line.i_id == TpccInputs::kUnusedItem) {
        ASSERT_EQ(l, input.ol_cnt - 1) << "only the last item may be unused";
        ++rollbacks;
      } else {
        ASSERT_GE(line.i_id, 1u);
        ASSERT_LE(line.i_id, kItems);
      }
      ASSERT_GE(line.quantity, 1u);
      ASSERT_LE(line.quantity, 10u);
      ++lines;
      remote_lines += line.supply_w_id != input.w_id ? 1 : 0;
    }
  }
  EXPECT_NEAR(static_cast<double>(rollbacks) / kDraws, 0.01, 0.002);
  EXPECT_NEAR(static_cast<double>(remote_lines) / lines, 0.01, 0.002);
  for (std::uint32_t w = 1; w <= kWarehouses; ++w) {
    EXPECT_NEAR(static_cast<double>(home[w]) / kDraws, 1.0 / kWarehouses, 0.01);
  }
}

TEST(TpccInputs, PaymentPicksCustomersByNameAndRemotelyAsSpecified) {
  constexpr std::uint32_t kWarehouses = 3;
  TpccInputs inputs(kWarehouses, {}, test_seed());
  constexpr int kDraws = 200000;
  int by_name = 0, remote = 0;
  for (int i = 0; i < kDraws; ++i) {
    const PaymentInput input = inputs.payment();
    ASSERT_GE(input.h_amount, 100);
    ASSERT_LE(input.h_amount, 500000);
    const CustomerSelector& customer = input.customer;
    ASSERT_GE(customer.w_id, 1u);
    ASSERT_LE(customer.w_id, kWarehouses);
    if (customer.by_last_name) {
      ++by_name;
      ASSERT_GE(text_of(customer.last).size(), 9u);
    } else {
      ASSERT_GE(customer.c_id, 1u);
      ASSERT_LE(customer.c_id, kCustomersPerDistrict);
    }
    if (customer.w_id != input.w_id) {
      ++remote;
    } else {
      ASSERT_EQ(customer.d_id, input.d_id);
    }
  }
  EXPECT_NEAR(static_cast<double>(by_name) / kDraws, 0.60, 0.01);
  EXPECT_NEAR(static_cast<double>(remote) / kDraws, 0.15, 0.01);
}

TEST(TpccInputs, SingleWarehouseNeverGoesRemote) {
  TpccInputs inputs(1, {}, test_seed());
  for (int i = 0; i < 20000; ++i) {
    const NewOrderInput order = inputs.new_order();
    for (std::uint32_t l = 0; l < order.ol_cnt; ++l) ASSERT_EQ(order.lines[l].supply_w_id, 1u);
    ASSERT_EQ(inputs.payment().customer.w_id, 1u);
  }
}

}  // namespace
}  // namespace tristore::tpcc
