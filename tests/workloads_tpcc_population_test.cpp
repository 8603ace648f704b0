// The TPC-C initial population (clause 4.3) of one warehouse on the main-memory architecture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/database.hpp"
#include "tests/test_support.hpp"
#include "workloads/tpcc_driver.hpp"

namespace tristore::tpcc {
namespace {

using testing_support::test_seed;

template <typename K, typename V>
std::uint64_t count_rows(Table<K, V> table) {
  return table.scan(K{}, SIZE_MAX, [](const K&, const V&) { return true; });
}

bool contains_original(std::string_view data) { return data.find("ORIGINAL") != data.npos; }

class TpccPopulationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Config config;
    config.architecture = Architecture::kMainMemory;
    config.dram_bytes = 1 * kGiB;
    db_ = Database::open(config).release();
    tpcc_ = new Tpcc(*db_, {.warehouses = 1, .seed = test_seed(7)});
    steps_ = new std::vector<TpccLoadStep>;
    totals_ = tpcc_->load([](const TpccLoadStep& step) { steps_->push_back(step); });
  }
  static void TearDownTestSuite() {
    delete steps_;
    delete tpcc_;
    delete db_;
  }
  static TpccTables tables() { return tpcc_->tables(); }

  static inline Database* db_ = nullptr;
  static inline Tpcc* tpcc_ = nullptr;
  static inline std::vector<TpccLoadStep>* steps_ = nullptr;
  static inline TpccLoadTotals totals_;
};

TEST_F(TpccPopulationTest, OneWarehouseHasTheSpecifiedRowCounts) {
  TpccTables t = tables();
  EXPECT_EQ(count_rows(t.warehouse), 1u);
  EXPECT_EQ(count_rows(t.district), 10u);
  EXPECT_EQ(count_rows(t.customer), 30000u);
  EXPECT_EQ(count_rows(t.customer_by_name), 30000u);
  EXPECT_EQ(count_rows(t.history), 30000u);
  EXPECT_EQ(count_rows(t.order), 30000u);
  EXPECT_EQ(count_rows(t.order_by_customer), 30000u);
  EXPECT_EQ(count_rows(t.new_order), 9000u);
  EXPECT_EQ(count_rows(t.item), 100000u);
  EXPECT_EQ(count_rows(t.stock), 100000u);
  // 5 to 15 lines per order, 10 on average: 300,000 give or take a few standard deviations.
  const std::uint64_t order_lines = count_rows(t.order_line);
  EXPECT_GE(order_lines, 295000u);
  EXPECT_LE(order_lines, 305000u);
  std::uint64_t ol_cnt_sum = 0;
  t.order.scan({}, SIZE_MAX, [&](const OrderKey&, const OrderRow& row) {
    ol_cnt_sum += row.ol_cnt;
    return true;
  });
  EXPECT_EQ(order_lines, ol_cnt_sum);
}

TEST_F(TpccPopulationTest, ProgressReportsEveryTableAndTheTotals) {
  ASSERT_EQ(steps_->size(), 11u);
  std::set<std::string> names;
  std::uint64_t rows = 0, bytes = 0;
  for (const TpccLoadStep& step : *steps_) {
    names.emplace(step.table);
    rows += step.rows;
    bytes += step.bytes;
    EXPECT_EQ(step.tables_total, 11u);
  }
  EXPECT_EQ(names.size(), 11u);
  EXPECT_EQ(steps_->back().tables_done, 11u);
  EXPECT_EQ(rows, totals_.rows);
  EXPECT_EQ(bytes, totals_.bytes);
  EXPECT_EQ(tpcc_->data_bytes(), totals_.bytes);
  EXPECT_EQ(totals_.history_rows, 30000u);
}

TEST_F(TpccPopulationTest, LoadedDatabaseMeetsTheConsistencyConditions) {
  const std::vector<std::string> violations = tpcc_->check_consistency();
  for (const std::string& v : violations) ADD_FAILURE() << v;
  EXPECT_TRUE(violations.empty());
}

TEST_F(TpccPopulationTest, WarehouseAndDistrictsStartAsSpecified) {
  TpccTables t = tables();
  WarehouseRow warehouse;
  ASSERT_TRUE(t.warehouse.get({1}, warehouse));
  EXPECT_EQ(warehouse.ytd, 30000000);
  EXPECT_LE(warehouse.tax, 2000);
  EXPECT_EQ(std::string_view(warehouse.zip + 4, 5), "11111");
  for (std::uint32_t d = 1; d <= 10; ++d) {
    DistrictRow district;
    ASSERT_TRUE(t.district.get({1, d}, district));
    EXPECT_EQ(district.next_o_id, 3001u);
    EXPECT_EQ(district.ytd, 3000000);
    std::vector<std::uint32_t> new_orders;
    t.new_order.scan({1, d, 0}, SIZE_MAX, [&](const NewOrderKey& key, const NewOrderRow&) {
      if (key.d_id != d) return false;
      new_orders.push_back(key.o_id);
      return true;
    });
    ASSERT_EQ(new_orders.size(), 900u);
    EXPECT_EQ(new_orders.front(), 2101u);
    EXPECT_EQ(new_orders.back(), 3000u);
  }
}

TEST_F(TpccPopulationTest, CustomersFollowClause4331) {
  std::set<std::string> valid_last_names;
  for (std::uint32_t n = 0; n < 1000; ++n) {
    char name[16];
    last_name(n, name);
    valid_last_names.emplace(text_of(name));
  }
  std::uint64_t bad_credit = 0, customers = 0;
  tables().customer.scan({}, SIZE_MAX, [&](const CustomerKey& key, const CustomerRow& row) {
    ++customers;
    if (key.c_id <= 1000) {
      char expected[16];
      last_name(key.c_id - 1, expected);
      EXPECT_EQ(text_of(row.last), text_of(expected)) << key.c_id;
    } else {
      EXPECT_TRUE(valid_last_names.contains(std::string(text_of(row.last)))) << key.c_id;
    }
    EXPECT_GE(text_of(row.first).size(), 8u);
    EXPECT_EQ(std::string_view(row.middle, 2), "OE");
    EXPECT_EQ(row.account.balance, -1000);
    EXPECT_EQ(row.account.ytd_payment, 1000);
    EXPECT_EQ(row.account.payment_cnt, 1u);
    EXPECT_EQ(row.account.delivery_cnt, 0u);
    EXPECT_EQ(row.credit_lim, 5000000);
    EXPECT_LE(row.discount, 5000);
    EXPECT_GE(text_of(row.data).size(), 300u);
    const std::string_view credit(row.credit, 2);
    EXPECT_TRUE(credit == "GC" || credit == "BC");
    bad_credit += credit == "BC" ? 1 : 0;
    return true;
  });
  EXPECT_EQ(customers, 30000u);
  EXPECT_NEAR(static_cast<double>(bad_credit) / customers, 0.10, 0.01);
}

TEST_F(TpccPopulationTest, NameIndexListsEachCustomerUnderItsNames) {
  TpccTables t = tables();
  std::uint64_t entries = 0;
  t.customer_by_name.scan({}, SIZE_MAX,
                          [&](const CustomerNameKey& key, const CustomerNameRow& row) {
                            ++entries;
                            if (entries % 97 != 0)
                              return true;  // a sample: one get per entry would be slow
                            CustomerRow customer;
                            EXPECT_TRUE(t.customer.get({key.w_id, key.d_id, row.c_id}, customer));
                            EXPECT_EQ(text_of(customer.last), text_of(key.last));
                            EXPECT_EQ(text_of(customer.first), text_of(key.first));
                            return true;
                          });
  EXPECT_EQ(entries, 30000u);
}

TEST_F(TpccPopulationTest, ItemsAndStockFollowClause4331) {
  TpccTables t = tables();
  std::uint64_t original = 0;
  t.item.scan({}, SIZE_MAX, [&](const ItemKey&, const ItemRow& row) {
    EXPECT_GE(row.price, 100);
    EXPECT_LE(row.price, 10000);
    EXPECT_GE(row.im_id, 1u);
    EXPECT_LE(row.im_id, 10000u);
    EXPECT_GE(text_of(row.data).size(), 26u);
    original += contains_original(text_of(row.data)) ? 1 : 0;
    return true;
  });
  EXPECT_NEAR(original / 100000.0, 0.10, 0.01);
  original = 0;
  t.stock.scan({}, SIZE_MAX, [&](const StockKey&, const StockRow& row) {
    EXPECT_GE(row.counters.quantity, 10);
    EXPECT_LE(row.counters.quantity, 100);
    EXPECT_EQ(row.counters.ytd, 0u);
    EXPECT_EQ(row.counters.order_cnt, 0u);
    EXPECT_EQ(text_of(row.dist[9]).size(), 24u);
    original += contains_original(text_of(row.data)) ? 1 : 0;
    return true;
  });
  EXPECT_NEAR(original / 100000.0, 0.10, 0.01);
}

TEST_F(TpccPopulationTest, OrdersGoToEveryCustomerOnceAndOnlyOldOnesAreDelivered) {
  TpccTables t = tables();
  std::vector<int> orders_of_customer(10 * 3000, 0);
  t.order.scan({}, SIZE_MAX, [&](const OrderKey& key, const OrderRow& row) {
    ++orders_of_customer[(key.d_id - 1) * 3000 + row.c_id - 1];
    EXPECT_EQ(row.carrier_id == kNoCarrier, key.o_id >= 2101) << key.o_id;
    EXPECT_GE(row.ol_cnt, 5u);
    EXPECT_LE(row.ol_cnt, 15u);
    EXPECT_EQ(row.all_local, 1u);
    return true;
  });
  EXPECT_TRUE(std::all_of(orders_of_customer.begin(), orders_of_customer.end(),
                          [](int n) { return n == 1; }));
  t.order_line.scan({}, SIZE_MAX, [&](const OrderLineKey& key, const OrderLineRow& row) {
    const bool delivered = key.o_id < 2101;
    EXPECT_EQ(row.delivery_d != 0, delivered);
    EXPECT_EQ(row.amount == 0, delivered);
    EXPECT_LE(row.amount, 999999);
    EXPECT_EQ(row.quantity, 5u);
    EXPECT_EQ(row.supply_w_id, 1u);
    EXPECT_GE(row.i_id, 1u);
    EXPECT_LE(row.i_id, 100000u);
    return !HasFailure();
  });
}

}  // namespace
}  // namespace tristore::tpcc
