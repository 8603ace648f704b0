#pragma once
// The terminal's side of TPC-C: which transaction comes next (the mix) and its random
// inputs (clause 2.4.1 - 2.8.1). No think or keying times.
#include <cstdint>

#include "workloads/tpcc_random.hpp"
#include "workloads/tpcc_transactions.hpp"

namespace tristore::tpcc {

class TpccInputs {
 public:
  // fixed_home: the terminal's home warehouse (clause 2.4.1.1); 0: uniform per transaction.
  TpccInputs(std::uint32_t warehouses, const NuRandConstants& run_constants, std::uint64_t seed,
             std::uint32_t fixed_home = 0)
      : warehouses_(warehouses),
        fixed_home_(fixed_home),
        constants_(run_constants),
        random_(seed) {}

  // New-Order 45 %, Payment 43 %, Order-Status, Delivery, Stock-Level 4 % each.
  TransactionType next_type() {
    const std::uint32_t x = random_.uniform(1, 100);
    if (x <= 45) return TransactionType::kNewOrder;
    if (x <= 88) return TransactionType::kPayment;
    if (x <= 92) return TransactionType::kOrderStatus;
    if (x <= 96) return TransactionType::kDelivery;
    return TransactionType::kStockLevel;
  }

  NewOrderInput new_order() {
    NewOrderInput input{};
    input.w_id = home_warehouse();
    input.d_id = district();
    input.c_id = customer_id();
    input.ol_cnt = random_.uniform(kMinOrderLines, kMaxOrderLines);
    const bool rollback = random_.uniform(1, 100) == 1;
    for (std::uint32_t i = 0; i < input.ol_cnt; ++i) {
      NewOrderInput::Line& line = input.lines[i];
      line.i_id = random_.nurand(8191, 1, kItems, constants_.ol_i_id);
      line.supply_w_id = random_.uniform(1, 100) == 1 ? other_warehouse(input.w_id) : input.w_id;
      line.quantity = random_.uniform(1, 10);
    }
    if (rollback) input.lines[input.ol_cnt - 1].i_id = kUnusedItem;
    return input;
  }

  PaymentInput payment() {
    PaymentInput input{};
    input.w_id = home_warehouse();
    input.d_id = district();
    const bool home = random_.uniform(1, 100) <= 85;
    const std::uint32_t c_w_id = home ? input.w_id : other_warehouse(input.w_id);
    const std::uint32_t c_d_id = home ? input.d_id : district();
    input.customer = customer(c_w_id, c_d_id);
    input.h_amount = random_.uniform(100, 500000);
    return input;
  }

  OrderStatusInput order_status() {
    const std::uint32_t w_id = home_warehouse();
    return {customer(w_id, district())};
  }

  DeliveryInput delivery() { return {home_warehouse(), random_.uniform(1, 10)}; }

  // One district per call: there are no terminals bound to a district here.
  StockLevelInput stock_level() { return {home_warehouse(), district(), random_.uniform(10, 20)}; }

  static constexpr std::uint32_t kUnusedItem = kItems + 1;

 private:
  std::uint32_t home_warehouse() {
    return fixed_home_ != 0 ? fixed_home_ : random_.uniform(1, warehouses_);
  }
  std::uint32_t district() { return random_.uniform(1, kDistrictsPerWarehouse); }
  std::uint32_t customer_id() {
    return random_.nurand(1023, 1, kCustomersPerDistrict, constants_.c_id);
  }
  // Uniform among the other warehouses; the home one if there is no other.
  std::uint32_t other_warehouse(std::uint32_t home) {
    if (warehouses_ == 1) return home;
    const std::uint32_t other = random_.uniform(1, warehouses_ - 1);
    return other >= home ? other + 1 : other;
  }
  // 60 % by last name, 40 % by id (clause 2.5.1.2, 2.6.1.2).
  CustomerSelector customer(std::uint32_t w_id, std::uint32_t d_id) {
    CustomerSelector selector{w_id, d_id, random_.uniform(1, 100) <= 60, 0, {}};
    if (selector.by_last_name) {
      last_name(random_.nurand(255, 0, 999, constants_.c_last), selector.last);
    } else {
      selector.c_id = customer_id();
    }
    return selector;
  }

  std::uint32_t warehouses_;
  std::uint32_t fixed_home_;
  NuRandConstants constants_;
  TpccRandom random_;
};

}  // namespace tristore::tpcc
