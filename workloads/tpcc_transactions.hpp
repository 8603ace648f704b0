#pragma once
// The five TPC-C transactions (clause 2.4 - 2.8) over the tables, given their inputs.
//
// New-Order, Payment and Delivery each run as one engine transaction (durable when they
// return, on a durable architecture); New-Order's unused item aborts its transaction after
// its first writes (a real rollback). Order-Status and Stock-Level only read.
#include <array>
#include <cstdint>
#include <vector>

#include "workloads/tpcc_schema.hpp"
#include "workloads/tpcc_tables.hpp"

namespace tristore::tpcc {

enum class TransactionType { kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel };
inline constexpr std::size_t kTransactionTypes = 5;

struct NewOrderInput {
  struct Line {
    std::uint32_t i_id, supply_w_id, quantity;
  };
  std::uint32_t w_id, d_id, c_id, ol_cnt;
  std::array<Line, kMaxOrderLines> lines;
};
struct NewOrderResult {
  bool committed = false;  // false: rolled back because an item does not exist
  std::uint32_t o_id = 0;
  double total = 0;  // sum(OL_AMOUNT) * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX), in cents
};

// The customer of Payment and Order-Status: by id, or by last name (the middle one by
// first name among those with that last name, clause 2.5.2.2).
struct CustomerSelector {
  std::uint32_t w_id, d_id;
  bool by_last_name;
  std::uint32_t c_id;  // when !by_last_name
  char last[16];       // when by_last_name
};

struct PaymentInput {
  std::uint32_t w_id, d_id;
  CustomerSelector customer;  // its w_id, d_id are C_W_ID, C_D_ID
  std::int64_t h_amount;      // cents
};
struct PaymentResult {
  std::uint32_t c_id = 0;
  std::int64_t c_balance = 0;
};

struct OrderStatusInput {
  CustomerSelector customer;
};
struct OrderStatusResult {
  std::uint32_t c_id = 0;
  std::uint32_t o_id = 0;  // 0: the customer has no order
  std::uint32_t lines = 0;
  std::int64_t c_balance = 0;
};

struct DeliveryInput {
  std::uint32_t w_id, carrier_id;
};
struct DeliveryResult {
  std::uint32_t delivered = 0;  // districts that had an undelivered order
};

struct StockLevelInput {
  std::uint32_t w_id, d_id, threshold;
};
struct StockLevelResult {
  std::uint32_t low_stock = 0;
};

class TpccTransactions {
 public:
  // History rows get sequence numbers from next_history_sequence on, history_sequence_step
  // apart (terminals on several threads interleave theirs).
  TpccTransactions(const TpccTables& tables, std::uint64_t next_history_sequence,
                   std::uint64_t history_sequence_step = 1);

  NewOrderResult new_order(const NewOrderInput& input);
  PaymentResult payment(const PaymentInput& input);
  OrderStatusResult order_status(const OrderStatusInput& input);
  DeliveryResult delivery(const DeliveryInput& input);
  StockLevelResult stock_level(const StockLevelInput& input);

 private:
  // In txn when given (Payment), else outside any (Order-Status, read-only).
  std::uint32_t select_customer(const CustomerSelector& selector, Transaction* txn = nullptr);
  static std::int64_t now();

  TpccTables tables_;
  std::uint64_t next_history_sequence_;
  std::uint64_t history_sequence_step_;
  // Reused buffers: no allocation per transaction once warm.
  std::vector<std::uint32_t> customers_with_last_name_;
  std::vector<std::uint32_t> recent_items_;
  std::vector<OrderLineKey> lines_to_deliver_;
};

}  // namespace tristore::tpcc
