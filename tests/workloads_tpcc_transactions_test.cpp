// The five TPC-C transactions on one warehouse (main-memory): each one's effects, New-Order's
// rollback, and the consistency conditions after a mixed run (also on the other architectures).
#include <gtest/gtest.h>

#include <thread>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
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

template <typename Row>
bool same_bytes(const Row& a, const Row& b) {
  return std::memcmp(&a, &b, sizeof(Row)) == 0;
}

void expect_consistent(const Tpcc& tpcc) {
  const std::vector<std::string> violations = tpcc.check_consistency();
  for (const std::string& v : violations) ADD_FAILURE() << v;
  EXPECT_TRUE(violations.empty());
}

NewOrderInput order_of(std::uint32_t d_id, std::uint32_t c_id,
                       const std::vector<std::uint32_t>& items, std::uint32_t quantity) {
  NewOrderInput input{};
  input.w_id = 1;
  input.d_id = d_id;
  input.c_id = c_id;
  input.ol_cnt = static_cast<std::uint32_t>(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) input.lines[i] = {items[i], 1, quantity};
  return input;
}

class TpccTransactionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Config config;
    config.architecture = Architecture::kMainMemory;
    config.dram_bytes = 1 * kGiB;
    db_ = Database::open(config).release();
    tpcc_ = new Tpcc(*db_, {.warehouses = 1, .seed = test_seed(11)});
    tpcc_->load();
  }
  static void TearDownTestSuite() {
    delete tpcc_;
    delete db_;
  }

  static TpccTables t() { return tpcc_->tables(); }
  static TpccTransactions& transactions() { return tpcc_->transactions_with_inputs(); }

  // The customers of a district by last name, each list in first-name order (read from the
  // customer table, not from the index the transactions use).
  static std::map<std::string, std::vector<std::uint32_t>> customers_by_name(std::uint32_t d_id) {
    std::map<std::string, std::vector<std::pair<std::string, std::uint32_t>>> found;
    t().customer.scan({1, d_id, 0}, SIZE_MAX, [&](const CustomerKey& key, const CustomerRow& row) {
      if (key.d_id != d_id) return false;
      found[std::string(text_of(row.last))].emplace_back(text_of(row.first), key.c_id);
      return true;
    });
    std::map<std::string, std::vector<std::uint32_t>> ids;
    for (auto& [last, customers] : found) {
      std::sort(customers.begin(), customers.end());
      for (const auto& [first, c_id] : customers) ids[last].push_back(c_id);
    }
    return ids;
  }

  static inline Database* db_ = nullptr;
  static inline Tpcc* tpcc_ = nullptr;
};

TEST_F(TpccTransactionsTest, NewOrderWithAnUnusedItemRollsBackWithoutATrace) {
  const std::vector<std::uint32_t> items = {11, 22, 33, 44, 55, TpccInputs::kUnusedItem};
  const NewOrderInput input = order_of(3, 17, items, 4);
  DistrictRow district_before, district_after;
  ASSERT_TRUE(t().district.get({1, 3}, district_before));
  CustomerRow customer_before, customer_after;
  ASSERT_TRUE(t().customer.get({1, 3, 17}, customer_before));
  std::vector<StockRow> stock_before(items.size() - 1);
  for (std::size_t i = 0; i + 1 < items.size(); ++i) {
    ASSERT_TRUE(t().stock.get({1, items[i]}, stock_before[i]));
  }
  const std::uint64_t orders = count_rows(t().order), new_orders = count_rows(t().new_order);
  const std::uint64_t lines = count_rows(t().order_line);
  const std::uint64_t index_entries = count_rows(t().order_by_customer);

  EXPECT_FALSE(transactions().new_order(input).committed);

  ASSERT_TRUE(t().district.get({1, 3}, district_after));
  EXPECT_TRUE(same_bytes(district_before, district_after));
  ASSERT_TRUE(t().customer.get({1, 3, 17}, customer_after));
  EXPECT_TRUE(same_bytes(customer_before, customer_after));
  for (std::size_t i = 0; i + 1 < items.size(); ++i) {
    StockRow stock;
    ASSERT_TRUE(t().stock.get({1, items[i]}, stock));
    EXPECT_TRUE(same_bytes(stock_before[i], stock)) << "item " << items[i];
  }
  EXPECT_EQ(count_rows(t().order), orders);
  EXPECT_EQ(count_rows(t().new_order), new_orders);
  EXPECT_EQ(count_rows(t().order_line), lines);
  EXPECT_EQ(count_rows(t().order_by_customer), index_entries);
  OrderRow order;
  EXPECT_FALSE(t().order.get({1, 3, district_before.next_o_id}, order));
  expect_consistent(*tpcc_);
}

TEST_F(TpccTransactionsTest, NewOrderWritesTheOrderAndTakesStockPerClause2425) {
  // One item with plenty of stock, one that must be restocked (+91).
  std::uint32_t plenty = 0, scarce = 0;
  std::int32_t plenty_quantity = 0, scarce_quantity = 0;
  t().stock.scan({1, 1}, SIZE_MAX, [&](const StockKey& key, const StockRow& row) {
    if (plenty == 0 && row.counters.quantity >= 30) {
      plenty = key.i_id;
      plenty_quantity = row.counters.quantity;
    }
    if (scarce == 0 && row.counters.quantity < 17) {
      scarce = key.i_id;
      scarce_quantity = row.counters.quantity;
    }
    return plenty == 0 || scarce == 0;
  });
  ASSERT_NE(plenty, 0u);
  ASSERT_NE(scarce, 0u);
  std::vector<std::uint32_t> items = {plenty, scarce};
  for (std::uint32_t i_id = 50000; items.size() < 5; ++i_id) {
    if (i_id != plenty && i_id != scarce) items.push_back(i_id);
  }
  DistrictRow district;
  ASSERT_TRUE(t().district.get({1, 8}, district));

  const NewOrderResult result = transactions().new_order(order_of(8, 123, items, 7));
  ASSERT_TRUE(result.committed);
  EXPECT_EQ(result.o_id, district.next_o_id);
  EXPECT_GT(result.total, 0);

  DistrictRow after;
  ASSERT_TRUE(t().district.get({1, 8}, after));
  EXPECT_EQ(after.next_o_id, district.next_o_id + 1);
  OrderRow order;
  ASSERT_TRUE(t().order.get({1, 8, result.o_id}, order));
  EXPECT_EQ(order.c_id, 123u);
  EXPECT_EQ(order.ol_cnt, 5u);
  EXPECT_EQ(order.carrier_id, kNoCarrier);
  EXPECT_EQ(order.all_local, 1u);
  NewOrderRow new_order;
  EXPECT_TRUE(t().new_order.get({1, 8, result.o_id}, new_order));
  for (std::uint32_t number = 1; number <= 5; ++number) {
    OrderLineRow line;
    ASSERT_TRUE(t().order_line.get({1, 8, result.o_id, number}, line));
    ItemRow item;
    StockRow stock;
    ASSERT_TRUE(t().item.get({items[number - 1]}, item));
    ASSERT_TRUE(t().stock.get({1, items[number - 1]}, stock));
    EXPECT_EQ(line.i_id, items[number - 1]);
    EXPECT_EQ(line.quantity, 7u);
    EXPECT_EQ(line.amount, 7 * item.price);
    EXPECT_EQ(line.delivery_d, 0);
    EXPECT_EQ(std::memcmp(line.dist_info, stock.dist[7], sizeof(line.dist_info)), 0);
    EXPECT_GE(stock.counters.ytd, 7u);
    EXPECT_GE(stock.counters.order_cnt, 1u);
  }
  StockRow stock;
  ASSERT_TRUE(t().stock.get({1, plenty}, stock));
  EXPECT_EQ(stock.counters.quantity, plenty_quantity - 7);
  ASSERT_TRUE(t().stock.get({1, scarce}, stock));
  EXPECT_EQ(stock.counters.quantity, scarce_quantity - 7 + 91);
  OrderStatusInput status{{1, 8, false, 123, {}}};
  const OrderStatusResult shown = transactions().order_status(status);
  EXPECT_EQ(shown.o_id, result.o_id);
  EXPECT_EQ(shown.lines, 5u);
  expect_consistent(*tpcc_);
}

TEST_F(TpccTransactionsTest, PaymentByLastNameChargesTheMiddleCustomerByFirstName) {
  // A name shared by an even number of customers: ceil(n / 2) is then not n / 2 + 1.
  std::string chosen;
  std::vector<std::uint32_t> named;
  for (const auto& [last, ids] : customers_by_name(2)) {
    if (ids.size() >= 2 && ids.size() % 2 == 0) {
      chosen = last;
      named = ids;
      break;
    }
  }
  ASSERT_FALSE(named.empty());
  char name[16];
  set_text(name, chosen);
  const std::uint32_t expected = named[named.size() / 2 - 1];
  WarehouseRow warehouse;
  DistrictRow district, paying_district;
  CustomerRow customer;
  ASSERT_TRUE(t().warehouse.get({1}, warehouse));
  ASSERT_TRUE(t().district.get({1, 2}, district));
  ASSERT_TRUE(t().district.get({1, 5}, paying_district));
  ASSERT_TRUE(t().customer.get({1, 2, expected}, customer));
  const std::uint64_t history = count_rows(t().history);

  PaymentInput input{};
  input.w_id = 1;
  input.d_id = 5;
  input.customer = {1, 2, true, 0, {}};
  std::memcpy(input.customer.last, name, sizeof(name));
  input.h_amount = 12345;
  const PaymentResult result = transactions().payment(input);

  EXPECT_EQ(result.c_id, expected);
  CustomerRow after;
  ASSERT_TRUE(t().customer.get({1, 2, expected}, after));
  EXPECT_EQ(after.account.balance, customer.account.balance - 12345);
  EXPECT_EQ(after.account.ytd_payment, customer.account.ytd_payment + 12345);
  EXPECT_EQ(after.account.payment_cnt, customer.account.payment_cnt + 1);
  EXPECT_EQ(result.c_balance, after.account.balance);
  WarehouseRow warehouse_after;
  DistrictRow district_after, paying_district_after;
  ASSERT_TRUE(t().warehouse.get({1}, warehouse_after));
  ASSERT_TRUE(t().district.get({1, 2}, district_after));
  EXPECT_EQ(warehouse_after.ytd, warehouse.ytd + 12345);
  EXPECT_EQ(district_after.ytd, district.ytd) << "the customer's district is not the paying one";
  ASSERT_TRUE(t().district.get({1, 5}, paying_district_after));
  EXPECT_EQ(paying_district_after.ytd, paying_district.ytd + 12345);
  EXPECT_EQ(count_rows(t().history), history + 1);
  OrderStatusInput status{input.customer};
  EXPECT_EQ(transactions().order_status(status).c_id, expected);
  expect_consistent(*tpcc_);
}

TEST_F(TpccTransactionsTest, PaymentByABadCreditCustomerPrependsItToCustomerData) {
  CustomerKey bad{};
  CustomerRow before;
  t().customer.scan({1, 9, 1}, SIZE_MAX, [&](const CustomerKey& key, const CustomerRow& row) {
    if (std::memcmp(row.credit, "BC", 2) != 0) return true;
    bad = key;
    before = row;
    return false;
  });
  ASSERT_NE(bad.c_id, 0u);
  PaymentInput input{};
  input.w_id = 1;
  input.d_id = 9;
  input.customer = {1, 9, false, bad.c_id, {}};
  input.h_amount = 1234;
  transactions().payment(input);
  CustomerRow after;
  ASSERT_TRUE(t().customer.get(bad, after));
  const std::string prefix = fmt::format("{} 9 1 9 1 12.34|", bad.c_id);
  const std::string_view data(after.data, sizeof(after.data));
  EXPECT_EQ(data.substr(0, prefix.size()), prefix);
  EXPECT_EQ(data.substr(prefix.size()),
            std::string_view(before.data, sizeof(before.data) - prefix.size()));
  expect_consistent(*tpcc_);
}

TEST_F(TpccTransactionsTest, DeliveryDeliversTheOldestNewOrderOfEachDistrict) {
  struct Expected {
    std::uint32_t o_id, c_id;
    std::int64_t amount, balance;
    std::uint32_t delivery_cnt;
  };
  std::vector<Expected> expected;
  for (std::uint32_t d = 1; d <= 10; ++d) {
    Expected e{};
    t().new_order.scan({1, d, 0}, 1, [&](const NewOrderKey& key, const NewOrderRow&) {
      e.o_id = key.o_id;
      return false;
    });
    OrderRow order;
    ASSERT_TRUE(t().order.get({1, d, e.o_id}, order));
    e.c_id = order.c_id;
    for (std::uint32_t n = 1; n <= order.ol_cnt; ++n) {
      OrderLineRow line;
      ASSERT_TRUE(t().order_line.get({1, d, e.o_id, n}, line));
      e.amount += line.amount;
    }
    CustomerRow customer;
    ASSERT_TRUE(t().customer.get({1, d, e.c_id}, customer));
    e.balance = customer.account.balance;
    e.delivery_cnt = customer.account.delivery_cnt;
    expected.push_back(e);
  }

  EXPECT_EQ(transactions().delivery({1, 7}).delivered, 10u);

  for (std::uint32_t d = 1; d <= 10; ++d) {
    const Expected& e = expected[d - 1];
    NewOrderRow new_order;
    EXPECT_FALSE(t().new_order.get({1, d, e.o_id}, new_order));
    OrderRow order;
    ASSERT_TRUE(t().order.get({1, d, e.o_id}, order));
    EXPECT_EQ(order.carrier_id, 7u);
    for (std::uint32_t n = 1; n <= order.ol_cnt; ++n) {
      OrderLineRow line;
      ASSERT_TRUE(t().order_line.get({1, d, e.o_id, n}, line));
      EXPECT_NE(line.delivery_d, 0);
    }
    CustomerRow customer;
    ASSERT_TRUE(t().customer.get({1, d, e.c_id}, customer));
    EXPECT_EQ(customer.account.balance, e.balance + e.amount);
    EXPECT_EQ(customer.account.delivery_cnt, e.delivery_cnt + 1);
  }
  expect_consistent(*tpcc_);
}

TEST_F(TpccTransactionsTest, StockLevelCountsDistinctItemsOfTheLast20OrdersBelowThreshold) {
  DistrictRow district;
  ASSERT_TRUE(t().district.get({1, 4}, district));
  std::vector<std::uint32_t> recent;
  for (std::uint32_t o = district.next_o_id - 20; o < district.next_o_id; ++o) {
    for (std::uint32_t n = 1; n <= kMaxOrderLines; ++n) {
      OrderLineRow line;
      if (t().order_line.get({1, 4, o, n}, line)) recent.push_back(line.i_id);
    }
  }
  std::sort(recent.begin(), recent.end());
  recent.erase(std::unique(recent.begin(), recent.end()), recent.end());
  ASSERT_GE(recent.size(), 20u);
  for (std::uint32_t threshold : {10u, 15u, 20u, 60u, 101u}) {
    std::uint32_t low = 0;
    for (std::uint32_t i_id : recent) {
      StockRow stock;
      ASSERT_TRUE(t().stock.get({1, i_id}, stock));
      low += stock.counters.quantity < static_cast<std::int32_t>(threshold) ? 1 : 0;
    }
    EXPECT_EQ(transactions().stock_level({1, 4, threshold}).low_stock, low) << threshold;
  }
  // Quantities stay in [10, 100]: nothing is below 10, everything below 101.
  EXPECT_EQ(transactions().stock_level({1, 4, 10}).low_stock, 0u);
  EXPECT_EQ(transactions().stock_level({1, 4, 101}).low_stock, recent.size());
}

TEST_F(TpccTransactionsTest, MixedRunKeepsTheDatabaseConsistent) {
  const TpccStats before = tpcc_->stats();
  constexpr std::uint64_t kTransactions = 4000;
  for (std::uint64_t i = 0; i < kTransactions; ++i) tpcc_->run_one();
  const TpccStats& after = tpcc_->stats();
  EXPECT_EQ(tpcc_->transactions(), before.total() + kTransactions);
  for (std::size_t type = 0; type < kTransactionTypes; ++type) {
    EXPECT_GT(after.executed[type], before.executed[type]) << "type " << type;
  }
  EXPECT_GT(after.new_order_rollbacks, before.new_order_rollbacks);
  expect_consistent(*tpcc_);
}

TEST_F(TpccTransactionsTest, CheckerReportsBrokenConditions) {
  auto mentions = [](const std::vector<std::string>& violations, std::string_view what) {
    return std::any_of(violations.begin(), violations.end(),
                       [&](const std::string& v) { return v.find(what) != v.npos; });
  };
  // D_YTD off by a cent: conditions 1 and 9.
  DistrictRow district;
  ASSERT_TRUE(t().district.get({1, 5}, district));
  const std::int64_t wrong_ytd = district.ytd + 1;
  t().district.update_part({1, 5}, offsetof(DistrictRow, ytd), sizeof(wrong_ytd), &wrong_ytd);
  std::vector<std::string> violations = tpcc_->check_consistency();
  EXPECT_TRUE(mentions(violations, "condition 1:"));
  EXPECT_TRUE(mentions(violations, "condition 9:"));
  ASSERT_TRUE(t().district.update({1, 5}, district));

  // The newest order loses its new-order row: conditions 2 and 5.
  ASSERT_TRUE(t().district.get({1, 6}, district));
  const NewOrderKey last{1, 6, district.next_o_id - 1};
  ASSERT_TRUE(t().new_order.remove(last));
  violations = tpcc_->check_consistency();
  EXPECT_TRUE(mentions(violations, "condition 2:"));
  EXPECT_TRUE(mentions(violations, "condition 5:"));
  ASSERT_TRUE(t().new_order.insert(last, NewOrderRow{1}));

  // An order line too many: conditions 4 and 6.
  const OrderLineKey extra{1, 6, 5, 16};
  ASSERT_TRUE(t().order_line.insert(extra, OrderLineRow{1, 0, 1, 1, 5, {}}));
  violations = tpcc_->check_consistency();
  EXPECT_TRUE(mentions(violations, "condition 4:"));
  EXPECT_TRUE(mentions(violations, "condition 6:"));
  ASSERT_TRUE(t().order_line.remove(extra));
  expect_consistent(*tpcc_);
}

TEST(TpccOptionsTest, ZeroWarehousesAndTransactionsBeforeLoadingAreErrors) {
  Config config;
  config.architecture = Architecture::kMainMemory;
  config.dram_bytes = 64 * kMiB;
  std::unique_ptr<Database> db = Database::open(config);
  EXPECT_THROW(Tpcc(*db, {.warehouses = 0, .seed = 1}), Error);
  Tpcc tpcc(*db, {.warehouses = 1, .seed = 1});  // the failed one created no tables
  EXPECT_THROW(tpcc.run_one(), Error);
  EXPECT_EQ(tpcc.transactions(), 0u);
}

// A load and a mixed run on the buffer-managed and NVM architectures, with pools smaller than
// the data where the architecture has a tier below (3tier: DRAM < NVM < data).
class TpccArchitectureTest : public ::testing::TestWithParam<Architecture> {};

TEST_P(TpccArchitectureTest, LoadAndMixedRunStayConsistentWithSmallPools) {
  const testing_support::DatabaseFiles files("tristore-tpcc");
  Config config;
  config.architecture = GetParam();
  const bool nvm_holds_all = config.architecture == Architecture::kBasicNvm ||
                             config.architecture == Architecture::kNvmDirect;
  config.dram_bytes = 32 * kMiB;
  config.nvm_bytes = nvm_holds_all ? 512 * kMiB : 64 * kMiB;
  config.ssd_bytes = 512 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  std::unique_ptr<Database> db;
  try {
    db = Database::open(config);
  } catch (const Error& e) {
    GTEST_SKIP() << architecture_name(config.architecture) << " does not open: " << e.what();
  }
  Tpcc tpcc(*db, {.warehouses = 1, .seed = test_seed(3)});
  tpcc.load();
  expect_consistent(tpcc);
  for (int i = 0; i < 2000; ++i) tpcc.run_one();
  EXPECT_EQ(tpcc.transactions(), 2000u);
  expect_consistent(tpcc);
  const Counters counters = db->counters();
  if (config.architecture == Architecture::kThreeTier) {
    EXPECT_GT(counters.nvm_admissions, 0u) << "the data should have spilled to NVM";
    EXPECT_GT(counters.ssd_pages_written, 0u) << "and beyond NVM to SSD";
  }
}

// Three terminals on three threads, all at home in the one warehouse: they contend for its
// district and warehouse rows, so transactions conflict, abort and retry; the database stays
// consistent and every transaction is counted once.
TEST_P(TpccArchitectureTest, ThreeTerminalsOnThreeThreadsConflictRetryAndStayConsistent) {
  const testing_support::DatabaseFiles files("tristore-tpcc-threads");
  Config config;
  config.architecture = GetParam();
  config.dram_bytes = 64 * kMiB;
  config.nvm_bytes = 512 * kMiB;
  config.ssd_bytes = 512 * kMiB;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  std::unique_ptr<Database> db = Database::open(config);
  Tpcc tpcc(*db, {.warehouses = 1, .seed = test_seed(5)});
  tpcc.load();
  constexpr unsigned kTerminals = 3;
  constexpr int kEach = 400;
  tpcc.use_terminals(kTerminals);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kTerminals; ++t)
    threads.emplace_back([&tpcc, t] {
      for (int i = 0; i < kEach; ++i) tpcc.run_one(t);
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(tpcc.transactions(), kTerminals * kEach);
  std::printf("%llu lock conflicts retried\n",
              static_cast<unsigned long long>(tpcc.stats().lock_conflicts));
  expect_consistent(tpcc);
  EXPECT_THROW(tpcc.use_terminals(2), Error) << "terminals are chosen before transactions run";
}

INSTANTIATE_TEST_SUITE_P(Architectures, TpccArchitectureTest,
                         ::testing::Values(Architecture::kThreeTier, Architecture::kSsdBm,
                                           Architecture::kBasicNvm, Architecture::kNvmDirect),
                         [](const ::testing::TestParamInfo<Architecture>& info) {
                           std::string name(architecture_name(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tristore::tpcc
