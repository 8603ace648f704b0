#include "workloads/tpcc_loader.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "common/error.hpp"

namespace tristore::tpcc {
namespace {

// Stream ids for TpccRandom::derive: one per kind of generated row.
enum Stream : std::uint64_t {
  kItemStream = 1,
  kWarehouseStream,
  kDistrictStream,
  kCustomerStream,
  kHistoryStream,
  kOrderPermutationStream,
  kOrderStream,
  kOrderLineStream,
  kStockStream,
};

constexpr std::uint32_t kOrdersPerWarehouse = kDistrictsPerWarehouse * kInitialOrdersPerDistrict;
constexpr std::uint32_t kCustomersPerWarehouse = kDistrictsPerWarehouse * kCustomersPerDistrict;

// Random text that contains "ORIGINAL" in 10 % of the rows (clause 4.3.3.1, I_DATA, S_DATA).
template <std::size_t N>
void data_field(TpccRandom& random, char (&field)[N]) {
  const std::size_t length = random.a_string(field, 26, 50);
  if (random.uniform(1, 10) == 1) {
    constexpr std::string_view kOriginal = "ORIGINAL";
    const std::size_t at = random.uniform(0, static_cast<std::uint32_t>(length - kOriginal.size()));
    std::memcpy(field + at, kOriginal.data(), kOriginal.size());
  }
}

template <typename Row>
void address(TpccRandom& random, Row& row) {
  random.a_string(row.street_1, 10, 20);
  random.a_string(row.street_2, 10, 20);
  random.a_string(row.city, 10, 20);
  random.a_string(row.state, 2, 2);
  random.n_string(row.zip, 4, 4);
  std::memcpy(row.zip + 4, "11111", 5);
}

class Loader {
 public:
  Loader(TpccTables& tables, const TpccPopulation& population, const TpccLoadProgress& progress)
      : tables_(tables), population_(population), progress_(progress) {}

  // 1. Tables without dependencies; 2. customers and their indexes; 3. orders, whose
  // customers follow a random permutation per district, and their lines.
  TpccLoadTotals run() {
    load_items();
    load_warehouses();
    load_stock();
    load_districts();
    load_customers();
    load_customer_names();
    load_history();
    load_orders();
    load_orders_by_customer();
    load_new_orders();
    load_order_lines();
    return totals_;
  }

 private:
  static constexpr std::size_t kTables = 11;

  TpccRandom random_for(Stream stream, std::uint64_t a = 0, std::uint64_t b = 0,
                        std::uint64_t c = 0) const {
    return TpccRandom(TpccRandom::derive(population_.seed, stream, a, b, c));
  }

  template <typename K, typename V, typename Generate>
  void load(std::string_view name, Table<K, V>& table, std::uint64_t count, Generate&& generate) {
    table.bulk_load(count, [&](std::size_t index, K& key, V& value) {
      key = K{};
      value = V{};
      generate(index, key, value);
    });
    const std::uint64_t bytes = count * (sizeof(K) + sizeof(V));
    totals_.rows += count;
    totals_.bytes += bytes;
    if (progress_) progress_({name, count, bytes, ++tables_done_, kTables});
  }

  std::uint32_t warehouses() const { return population_.warehouses; }

  void load_items() {
    load("item", tables_.item, kItems, [&](std::size_t index, ItemKey& key, ItemRow& row) {
      key.i_id = static_cast<std::uint32_t>(index) + 1;
      TpccRandom random = random_for(kItemStream, key.i_id);
      row.im_id = random.uniform(1, 10000);
      random.a_string(row.name, 14, 24);
      row.price = random.uniform(100, 10000);
      data_field(random, row.data);
    });
  }

  void load_warehouses() {
    load("warehouse", tables_.warehouse, warehouses(),
         [&](std::size_t index, WarehouseKey& key, WarehouseRow& row) {
           key.w_id = static_cast<std::uint32_t>(index) + 1;
           TpccRandom random = random_for(kWarehouseStream, key.w_id);
           random.a_string(row.name, 6, 10);
           address(random, row);
           row.tax = static_cast<std::int32_t>(random.uniform(0, 2000));
           row.ytd = 30000000;  // 300,000.00
         });
  }

  void load_stock() {
    load("stock", tables_.stock, std::uint64_t{warehouses()} * kItems,
         [&](std::size_t index, StockKey& key, StockRow& row) {
           key.w_id = static_cast<std::uint32_t>(index / kItems) + 1;
           key.i_id = static_cast<std::uint32_t>(index % kItems) + 1;
           TpccRandom random = random_for(kStockStream, key.w_id, key.i_id);
           row.counters.quantity = static_cast<std::int32_t>(random.uniform(10, 100));
           for (auto& dist : row.dist) random.a_string(dist, 24, 24);
           data_field(random, row.data);
         });
  }

  void load_districts() {
    load("district", tables_.district, std::uint64_t{warehouses()} * kDistrictsPerWarehouse,
         [&](std::size_t index, DistrictKey& key, DistrictRow& row) {
           key.w_id = static_cast<std::uint32_t>(index / kDistrictsPerWarehouse) + 1;
           key.d_id = static_cast<std::uint32_t>(index % kDistrictsPerWarehouse) + 1;
           TpccRandom random = random_for(kDistrictStream, key.w_id, key.d_id);
           random.a_string(row.name, 6, 10);
           address(random, row);
           row.tax = static_cast<std::int32_t>(random.uniform(0, 2000));
           row.ytd = 3000000;  // 30,000.00
           row.next_o_id = kInitialOrdersPerDistrict + 1;
         });
  }

  static CustomerKey customer_at(std::size_t index) {
    return {static_cast<std::uint32_t>(index / kCustomersPerWarehouse) + 1,
            static_cast<std::uint32_t>(index / kCustomersPerDistrict % kDistrictsPerWarehouse) + 1,
            static_cast<std::uint32_t>(index % kCustomersPerDistrict) + 1};
  }

  // The customer's generator after drawing its names: the name index regenerates them.
  TpccRandom customer_names(const CustomerKey& key, char (&last)[16], char (&first)[16]) const {
    TpccRandom random = random_for(kCustomerStream, key.w_id, key.d_id, key.c_id);
    const std::uint32_t number =
        key.c_id <= 1000 ? key.c_id - 1 : random.nurand(255, 0, 999, population_.constants.c_last);
    last_name(number, last);
    random.a_string(first, 8, 16);
    return random;
  }

  void load_customers() {
    load("customer", tables_.customer, std::uint64_t{warehouses()} * kCustomersPerWarehouse,
         [&](std::size_t index, CustomerKey& key, CustomerRow& row) {
           key = customer_at(index);
           TpccRandom random = customer_names(key, row.last, row.first);
           std::memcpy(row.middle, "OE", 2);
           address(random, row);
           random.n_string(row.phone, 16, 16);
           row.since = population_.now;
           std::memcpy(row.credit, random.uniform(1, 10) == 1 ? "BC" : "GC", 2);
           row.credit_lim = 5000000;
           row.discount = static_cast<std::int32_t>(random.uniform(0, 5000));
           row.account = {-1000, 1000, 1, 0};
           random.a_string(row.data, 300, 500);
         });
  }

  void load_customer_names() {
    std::vector<CustomerNameKey> district(kCustomersPerDistrict);
    std::size_t loaded_district = SIZE_MAX;
    load("customer_by_name", tables_.customer_by_name,
         std::uint64_t{warehouses()} * kCustomersPerWarehouse,
         [&](std::size_t index, CustomerNameKey& key, CustomerNameRow& row) {
           if (index / kCustomersPerDistrict != loaded_district) {
             loaded_district = index / kCustomersPerDistrict;
             for (std::uint32_t c = 0; c < kCustomersPerDistrict; ++c) {
               const CustomerKey customer =
                   customer_at(loaded_district * kCustomersPerDistrict + c);
               CustomerNameKey& name = district[c];
               name = CustomerNameKey{};
               name.w_id = customer.w_id;
               name.d_id = customer.d_id;
               name.c_id = customer.c_id;
               customer_names(customer, name.last, name.first);
             }
             std::sort(district.begin(), district.end());
           }
           key = district[index % kCustomersPerDistrict];
           row.c_id = key.c_id;
         });
  }

  void load_history() {
    const std::uint64_t count = std::uint64_t{warehouses()} * kCustomersPerWarehouse;
    load("history", tables_.history, count,
         [&](std::size_t index, HistoryKey& key, HistoryRow& row) {
           const CustomerKey customer = customer_at(index);
           key.sequence = index;
           TpccRandom random =
               random_for(kHistoryStream, customer.w_id, customer.d_id, customer.c_id);
           row.c_id = customer.c_id;
           row.c_d_id = row.d_id = customer.d_id;
           row.c_w_id = row.w_id = customer.w_id;
           row.date = population_.now;
           row.amount = 1000;
           random.a_string(row.data, 12, 24);
         });
    totals_.history_rows = count;
  }

  // O_C_ID of each order of a district: a random permutation of the customers.
  void customer_permutation(std::uint32_t w_id, std::uint32_t d_id,
                            std::vector<std::uint32_t>& customer_of_order) const {
    customer_of_order.resize(kInitialOrdersPerDistrict);
    std::iota(customer_of_order.begin(), customer_of_order.end(), 1u);
    TpccRandom random = random_for(kOrderPermutationStream, w_id, d_id);
    for (std::uint32_t i = kInitialOrdersPerDistrict - 1; i > 0; --i) {
      std::swap(customer_of_order[i], customer_of_order[random.uniform(0, i)]);
    }
  }

  static OrderKey order_at(std::size_t index) {
    return {
        static_cast<std::uint32_t>(index / kOrdersPerWarehouse) + 1,
        static_cast<std::uint32_t>(index / kInitialOrdersPerDistrict % kDistrictsPerWarehouse) + 1,
        static_cast<std::uint32_t>(index % kInitialOrdersPerDistrict) + 1};
  }

  // The order's generator after drawing O_OL_CNT: the order lines need the count too.
  TpccRandom order_random(const OrderKey& key, std::uint32_t& ol_cnt) const {
    TpccRandom random = random_for(kOrderStream, key.w_id, key.d_id, key.o_id);
    ol_cnt = random.uniform(kMinOrderLines, kMaxOrderLines);
    return random;
  }

  void load_orders() {
    std::vector<std::uint32_t> customer_of_order;
    std::size_t loaded_district = SIZE_MAX;
    load("order", tables_.order, std::uint64_t{warehouses()} * kOrdersPerWarehouse,
         [&](std::size_t index, OrderKey& key, OrderRow& row) {
           key = order_at(index);
           if (index / kInitialOrdersPerDistrict != loaded_district) {
             loaded_district = index / kInitialOrdersPerDistrict;
             customer_permutation(key.w_id, key.d_id, customer_of_order);
           }
           TpccRandom random = order_random(key, row.ol_cnt);
           row.c_id = customer_of_order[key.o_id - 1];
           row.entry_d = population_.now;
           row.carrier_id = key.o_id < kFirstUndeliveredOrder ? random.uniform(1, 10) : kNoCarrier;
           row.all_local = 1;
         });
  }

  void load_orders_by_customer() {
    std::vector<std::uint32_t> customer_of_order;
    std::vector<std::uint32_t> order_of_customer(kCustomersPerDistrict + 1);
    std::size_t loaded_district = SIZE_MAX;
    load("order_by_customer", tables_.order_by_customer,
         std::uint64_t{warehouses()} * kOrdersPerWarehouse,
         [&](std::size_t index, OrderByCustomerKey& key, OrderByCustomerRow& row) {
           const CustomerKey customer = customer_at(index);  // one order per customer
           if (index / kCustomersPerDistrict != loaded_district) {
             loaded_district = index / kCustomersPerDistrict;
             customer_permutation(customer.w_id, customer.d_id, customer_of_order);
             for (std::uint32_t o = 1; o <= kInitialOrdersPerDistrict; ++o) {
               order_of_customer[customer_of_order[o - 1]] = o;
             }
           }
           row.o_id = order_of_customer[customer.c_id];
           key = {customer.w_id, customer.d_id, customer.c_id, invert_order_id(row.o_id)};
         });
  }

  void load_new_orders() {
    load("new_order", tables_.new_order,
         std::uint64_t{warehouses()} * kDistrictsPerWarehouse * kInitialNewOrdersPerDistrict,
         [&](std::size_t index, NewOrderKey& key, NewOrderRow& row) {
           const std::size_t district = index / kInitialNewOrdersPerDistrict;
           key.w_id = static_cast<std::uint32_t>(district / kDistrictsPerWarehouse) + 1;
           key.d_id = static_cast<std::uint32_t>(district % kDistrictsPerWarehouse) + 1;
           key.o_id = kFirstUndeliveredOrder +
                      static_cast<std::uint32_t>(index % kInitialNewOrdersPerDistrict);
           row.present = 1;
         });
  }

  // Walks the order lines in key order; bulk_load asks for them in index order.
  void load_order_lines() {
    const std::uint64_t orders = std::uint64_t{warehouses()} * kOrdersPerWarehouse;
    std::uint64_t count = 0;
    for (std::uint64_t i = 0; i < orders; ++i) {
      std::uint32_t ol_cnt = 0;
      order_random(order_at(i), ol_cnt);
      count += ol_cnt;
    }
    std::uint64_t next_index = 0, order_index = 0;
    std::uint32_t number = 0, ol_cnt = 0;
    OrderKey order{};
    load("order_line", tables_.order_line, count,
         [&](std::size_t index, OrderLineKey& key, OrderLineRow& row) {
           if (index != next_index) fail("tpcc: bulk_load generated order lines out of order");
           ++next_index;
           if (number == ol_cnt) {
             order = order_at(order_index++);
             order_random(order, ol_cnt);
             number = 0;
           }
           ++number;
           key = {order.w_id, order.d_id, order.o_id, number};
           TpccRandom random = random_for(kOrderLineStream, order.w_id, order.d_id,
                                          std::uint64_t{order.o_id} << 8 | number);
           const bool delivered = order.o_id < kFirstUndeliveredOrder;
           row.i_id = random.uniform(1, kItems);
           row.supply_w_id = order.w_id;
           row.delivery_d = delivered ? population_.now : 0;
           row.quantity = 5;
           row.amount = delivered ? 0 : random.uniform(1, 999999);
           random.a_string(row.dist_info, 24, 24);
         });
  }

  TpccTables& tables_;
  const TpccPopulation& population_;
  const TpccLoadProgress& progress_;
  TpccLoadTotals totals_;
  std::size_t tables_done_ = 0;
};

}  // namespace

TpccLoadTotals load_population(TpccTables& tables, const TpccPopulation& population,
                               const TpccLoadProgress& progress) {
  if (population.warehouses == 0) fail("tpcc: at least one warehouse is needed");
  return Loader(tables, population, progress).run();
}

}  // namespace tristore::tpcc
