#include "workloads/tpcc_consistency.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tristore::tpcc {
namespace {

constexpr std::size_t kMaxViolations = 100;

class Checker {
 public:
  Checker(const TpccTables& tables, std::uint32_t warehouses)
      : tables_(tables), warehouses_(warehouses) {}

  // 1. History sums per warehouse, district, customer; 2. per district: orders, new orders,
  // order lines, customers, indexes; 3. per warehouse: its year-to-date totals.
  std::vector<std::string> run() {
    sum_history();
    for (std::uint32_t w = 1; w <= warehouses_; ++w) {
      std::int64_t district_ytd_sum = 0;
      for (std::uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
        district_ytd_sum += check_district(w, d);
      }
      check_warehouse(w, district_ytd_sum);
    }
    if (skipped_ > 0) violations_.push_back(fmt::format("... and {} more violations", skipped_));
    return std::move(violations_);
  }

 private:
  struct Names {
    char last[16], first[16];
  };
  struct Order {
    std::uint32_t o_id, c_id, carrier_id, ol_cnt, lines = 0;
  };

  template <typename... Args>
  void violation(fmt::format_string<Args...> format, Args&&... args) {
    if (violations_.size() < kMaxViolations) {
      violations_.push_back(fmt::format(format, std::forward<Args>(args)...));
    } else {
      ++skipped_;
    }
  }

  std::size_t district_index(std::uint32_t w, std::uint32_t d) const {
    return (std::size_t{w} - 1) * kDistrictsPerWarehouse + d - 1;
  }
  std::size_t customer_index(std::uint32_t w, std::uint32_t d, std::uint32_t c) const {
    return district_index(w, d) * kCustomersPerDistrict + c - 1;
  }
  bool valid(std::uint32_t w, std::uint32_t d, std::uint32_t c) const {
    return w >= 1 && w <= warehouses_ && d >= 1 && d <= kDistrictsPerWarehouse && c >= 1 &&
           c <= kCustomersPerDistrict;
  }

  void sum_history() {
    history_by_warehouse_.assign(warehouses_ + 1, 0);
    history_by_district_.assign(std::size_t{warehouses_} * kDistrictsPerWarehouse, 0);
    history_by_customer_.assign(
        std::size_t{warehouses_} * kDistrictsPerWarehouse * kCustomersPerDistrict, 0);
    tables_.history.scan({0}, SIZE_MAX, [&](const HistoryKey& key, const HistoryRow& row) {
      if (!valid(row.w_id, row.d_id, 1) || !valid(row.c_w_id, row.c_d_id, row.c_id)) {
        violation("history {}: bad ids", key.sequence);
        return true;
      }
      history_by_warehouse_[row.w_id] += row.amount;
      history_by_district_[district_index(row.w_id, row.d_id)] += row.amount;
      history_by_customer_[customer_index(row.c_w_id, row.c_d_id, row.c_id)] += row.amount;
      return true;
    });
  }

  void check_warehouse(std::uint32_t w, std::int64_t district_ytd_sum) {
    WarehouseRow warehouse;
    if (!tables_.warehouse.get({w}, warehouse)) {
      violation("warehouse {} is missing", w);
      return;
    }
    if (warehouse.ytd != district_ytd_sum) {
      violation("condition 1: warehouse {}: W_YTD {} != sum(D_YTD) {}", w, warehouse.ytd,
                district_ytd_sum);
    }
    if (warehouse.ytd != history_by_warehouse_[w]) {
      violation("condition 8: warehouse {}: W_YTD {} != sum(H_AMOUNT) {}", w, warehouse.ytd,
                history_by_warehouse_[w]);
    }
  }

  // Returns D_YTD.
  std::int64_t check_district(std::uint32_t w, std::uint32_t d) {
    DistrictRow district;
    if (!tables_.district.get({w, d}, district)) {
      violation("district {}/{} is missing", w, d);
      return 0;
    }
    if (district.ytd != history_by_district_[district_index(w, d)]) {
      violation("condition 9: district {}/{}: D_YTD {} != sum(H_AMOUNT) {}", w, d, district.ytd,
                history_by_district_[district_index(w, d)]);
    }
    load_new_orders(w, d);
    load_orders(w, d);
    const std::uint32_t max_o_id = orders_.empty() ? 0 : orders_.back().o_id;
    if (district.next_o_id - 1 != max_o_id) {
      violation("condition 2: district {}/{}: D_NEXT_O_ID - 1 = {} != max(O_ID) {}", w, d,
                district.next_o_id - 1, max_o_id);
    }
    if (!new_orders_.empty()) {
      const std::uint32_t min_no = new_orders_.front(), max_no = new_orders_.back();
      if (max_no != max_o_id) {
        violation("condition 2: district {}/{}: max(NO_O_ID) {} != max(O_ID) {}", w, d, max_no,
                  max_o_id);
      }
      if (max_no - min_no + 1 != new_orders_.size()) {
        violation("condition 3: district {}/{}: max(NO_O_ID) - min(NO_O_ID) + 1 = {} != {} rows", w,
                  d, max_no - min_no + 1, new_orders_.size());
      }
    }
    check_order_lines(w, d);
    check_orders(w, d);
    check_customers(w, d);
    check_order_index(w, d);
    check_name_index(w, d);
    return district.ytd;
  }

  void load_new_orders(std::uint32_t w, std::uint32_t d) {
    new_orders_.clear();
    tables_.new_order.scan({w, d, 0}, SIZE_MAX, [&](const NewOrderKey& key, const NewOrderRow&) {
      if (key.w_id != w || key.d_id != d) return false;
      new_orders_.push_back(key.o_id);
      return true;
    });
  }

  void load_orders(std::uint32_t w, std::uint32_t d) {
    orders_.clear();
    tables_.order.scan({w, d, 0}, SIZE_MAX, [&](const OrderKey& key, const OrderRow& row) {
      if (key.w_id != w || key.d_id != d) return false;
      orders_.push_back({key.o_id, row.c_id, row.carrier_id, row.ol_cnt});
      return true;
    });
  }

  Order* find_order(std::uint32_t o_id) {
    auto it =
        std::lower_bound(orders_.begin(), orders_.end(), o_id,
                         [](const Order& order, std::uint32_t id) { return order.o_id < id; });
    return it != orders_.end() && it->o_id == o_id ? &*it : nullptr;
  }

  // Conditions 4 and 7; counts each order's lines and sums delivered amounts per customer.
  void check_order_lines(std::uint32_t w, std::uint32_t d) {
    delivered_by_customer_.assign(kCustomersPerDistrict + 1, 0);
    std::uint64_t lines = 0, ol_cnt_sum = 0;
    Order* order = nullptr;
    tables_.order_line.scan(
        {w, d, 0, 0}, SIZE_MAX, [&](const OrderLineKey& key, const OrderLineRow& row) {
          if (key.w_id != w || key.d_id != d) return false;
          ++lines;
          if (order == nullptr || order->o_id != key.o_id) order = find_order(key.o_id);
          if (order == nullptr) {
            violation("order line {}/{}/{}/{} has no order", w, d, key.o_id, key.number);
            return true;
          }
          ++order->lines;
          if ((row.delivery_d == 0) != (order->carrier_id == kNoCarrier)) {
            violation("condition 7: order line {}/{}/{}/{}: OL_DELIVERY_D {} but O_CARRIER_ID {}",
                      w, d, key.o_id, key.number, row.delivery_d, order->carrier_id);
          }
          if (row.delivery_d != 0 && order->c_id >= 1 && order->c_id <= kCustomersPerDistrict) {
            delivered_by_customer_[order->c_id] += row.amount;
          }
          return true;
        });
    for (const Order& o : orders_) ol_cnt_sum += o.ol_cnt;
    if (ol_cnt_sum != lines) {
      violation("condition 4: district {}/{}: sum(O_OL_CNT) {} != {} order lines", w, d, ol_cnt_sum,
                lines);
    }
  }

  // Conditions 5 and 6.
  void check_orders(std::uint32_t w, std::uint32_t d) {
    for (const Order& order : orders_) {
      const bool undelivered =
          std::binary_search(new_orders_.begin(), new_orders_.end(), order.o_id);
      if (undelivered != (order.carrier_id == kNoCarrier)) {
        violation("condition 5: order {}/{}/{}: O_CARRIER_ID {} but {} new-order row", w, d,
                  order.o_id, order.carrier_id, undelivered ? "a" : "no");
      }
      if (order.ol_cnt != order.lines) {
        violation("condition 6: order {}/{}/{}: O_OL_CNT {} != {} order lines", w, d, order.o_id,
                  order.ol_cnt, order.lines);
      }
    }
    for (std::uint32_t o_id : new_orders_) {
      if (find_order(o_id) == nullptr) violation("new order {}/{}/{} has no order", w, d, o_id);
    }
  }

  // Conditions 10 and 12.
  void check_customers(std::uint32_t w, std::uint32_t d) {
    names_by_customer_.assign(kCustomersPerDistrict + 1, Names{});
    std::uint32_t count = 0;
    tables_.customer.scan({w, d, 0}, SIZE_MAX, [&](const CustomerKey& key, const CustomerRow& row) {
      if (key.w_id != w || key.d_id != d) return false;
      ++count;
      if (!valid(w, d, key.c_id)) {
        violation("customer {}/{}/{}: bad id", w, d, key.c_id);
        return true;
      }
      Names& names = names_by_customer_[key.c_id];
      std::memcpy(names.last, row.last, sizeof(names.last));
      std::memcpy(names.first, row.first, sizeof(names.first));
      const std::int64_t delivered = delivered_by_customer_[key.c_id];
      const std::int64_t paid = history_by_customer_[customer_index(w, d, key.c_id)];
      if (row.account.balance != delivered - paid) {
        violation("condition 10: customer {}/{}/{}: C_BALANCE {} != {} delivered - {} paid", w, d,
                  key.c_id, row.account.balance, delivered, paid);
      }
      if (row.account.balance + row.account.ytd_payment != delivered) {
        violation("condition 12: customer {}/{}/{}: C_BALANCE + C_YTD_PAYMENT {} != {} delivered",
                  w, d, key.c_id, row.account.balance + row.account.ytd_payment, delivered);
      }
      return true;
    });
    if (count != kCustomersPerDistrict) {
      violation("district {}/{}: {} customers, not {}", w, d, count, kCustomersPerDistrict);
    }
  }

  void check_order_index(std::uint32_t w, std::uint32_t d) {
    std::size_t entries = 0;
    tables_.order_by_customer.scan(
        {w, d, 0, 0}, SIZE_MAX, [&](const OrderByCustomerKey& key, const OrderByCustomerRow& row) {
          if (key.w_id != w || key.d_id != d) return false;
          ++entries;
          const Order* order = find_order(row.o_id);
          if (row.o_id != invert_order_id(key.inverted_o_id) || order == nullptr ||
              order->c_id != key.c_id) {
            violation("order index entry {}/{}/{}/{} does not match an order", w, d, key.c_id,
                      row.o_id);
          }
          return true;
        });
    if (entries != orders_.size()) {
      violation("district {}/{}: {} order index entries for {} orders", w, d, entries,
                orders_.size());
    }
  }

  void check_name_index(std::uint32_t w, std::uint32_t d) {
    CustomerNameKey from{};
    from.w_id = w;
    from.d_id = d;
    std::uint32_t entries = 0;
    tables_.customer_by_name.scan(
        from, SIZE_MAX, [&](const CustomerNameKey& key, const CustomerNameRow& row) {
          if (key.w_id != w || key.d_id != d) return false;
          ++entries;
          const bool known = row.c_id == key.c_id && valid(w, d, key.c_id);
          if (!known ||
              std::memcmp(names_by_customer_[key.c_id].last, key.last, sizeof(key.last)) != 0 ||
              std::memcmp(names_by_customer_[key.c_id].first, key.first, sizeof(key.first)) != 0) {
            violation("name index entry {}/{}/{} does not match the customer's names", w, d,
                      key.c_id);
          }
          return true;
        });
    if (entries != kCustomersPerDistrict) {
      violation("district {}/{}: {} name index entries, not {}", w, d, entries,
                kCustomersPerDistrict);
    }
  }

  TpccTables tables_;
  std::uint32_t warehouses_;
  std::vector<std::string> violations_;
  std::size_t skipped_ = 0;
  std::vector<std::int64_t> history_by_warehouse_, history_by_district_, history_by_customer_;
  std::vector<std::int64_t> delivered_by_customer_;  // of the current district, by c_id
  std::vector<std::uint32_t> new_orders_;            // of the current district, ascending
  std::vector<Order> orders_;                        // of the current district, ascending
  std::vector<Names> names_by_customer_;             // of the current district, by c_id
};

}  // namespace

std::vector<std::string> check_consistency(const TpccTables& tables, std::uint32_t warehouses) {
  return Checker(tables, warehouses).run();
}

}  // namespace tristore::tpcc
