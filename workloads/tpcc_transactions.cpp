#include "workloads/tpcc_transactions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstring>

#include "common/error.hpp"
#include "engine/transaction.hpp"

namespace tristore::tpcc {
namespace {

// The bytes of one member, for get_part / update_part.
#define TPCC_FIELD(Row, member) offsetof(Row, member), sizeof(Row::member)

bool contains_original(const char* data, std::size_t size) {
  return std::string_view(data, ::strnlen(data, size)).find("ORIGINAL") != std::string_view::npos;
}

}  // namespace

TpccTransactions::TpccTransactions(const TpccTables& tables, std::uint64_t next_history_sequence,
                                   std::uint64_t history_sequence_step)
    : tables_(tables),
      next_history_sequence_(next_history_sequence),
      history_sequence_step_(history_sequence_step) {
  customers_with_last_name_.reserve(64);
  recent_items_.reserve(20 * kMaxOrderLines);
  lines_to_deliver_.reserve(kMaxOrderLines);
}

std::int64_t TpccTransactions::now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

NewOrderResult TpccTransactions::new_order(const NewOrderInput& input) {
  assert(input.ol_cnt >= kMinOrderLines && input.ol_cnt <= kMaxOrderLines);
  NewOrderResult result;
  // 1. One transaction; the items up to the first unused id (clause 2.4.2.3), where the
  // transaction will roll back everything it did before.
  Transaction txn = tables_.db->begin();
  std::array<ItemRow, kMaxOrderLines> items;
  std::uint32_t unused_item = input.ol_cnt;
  for (std::uint32_t i = 0; i < input.ol_cnt; ++i) {
    if (!tables_.item.get(txn, {input.lines[i].i_id}, items[i])) {
      unused_item = i;
      break;
    }
  }

  // 2. Warehouse and district taxes; take the district's next order id.
  std::int32_t w_tax = 0;
  tables_.warehouse.get_part(txn, {input.w_id}, TPCC_FIELD(WarehouseRow, tax), &w_tax);
  const DistrictKey district_key{input.w_id, input.d_id};
  struct {
    std::uint32_t next_o_id;
    std::int32_t tax;
  } district;
  static_assert(offsetof(DistrictRow, tax) == offsetof(DistrictRow, next_o_id) + 4);
  if (!tables_.district.get_part(txn, district_key, offsetof(DistrictRow, next_o_id),
                                 sizeof(district), &district)) {
    fail("tpcc: district {}/{} is missing", input.w_id, input.d_id);
  }
  const std::uint32_t o_id = district.next_o_id;
  const std::uint32_t next_o_id = o_id + 1;
  tables_.district.update_part(txn, district_key, TPCC_FIELD(DistrictRow, next_o_id), &next_o_id);

  // 3. The customer's discount and credit (and names, shown on the terminal).
  struct {
    std::int32_t discount;
    char credit[2], middle[2], first[16], last[16];
  } customer;
  static_assert(offsetof(CustomerRow, last) + sizeof(CustomerRow::last) -
                    offsetof(CustomerRow, discount) ==
                sizeof(customer));
  tables_.customer.get_part(txn, {input.w_id, input.d_id, input.c_id},
                            offsetof(CustomerRow, discount), sizeof(customer), &customer);

  // 4. The order, its new-order entry and its place in the customer's order index.
  const std::int64_t entry_d = now();
  bool all_local = true;
  for (std::uint32_t i = 0; i < input.ol_cnt; ++i) {
    all_local &= input.lines[i].supply_w_id == input.w_id;
  }
  tables_.order.insert(
      txn, {input.w_id, input.d_id, o_id},
      OrderRow{entry_d, input.c_id, kNoCarrier, input.ol_cnt, all_local ? 1u : 0u});
  tables_.new_order.insert(txn, {input.w_id, input.d_id, o_id}, NewOrderRow{1});
  tables_.order_by_customer.insert(txn, {input.w_id, input.d_id, input.c_id, invert_order_id(o_id)},
                                   OrderByCustomerRow{o_id});

  // 5. Per line: take the stock, write the order line.
  std::int64_t sum = 0;
  for (std::uint32_t i = 0; i < input.ol_cnt; ++i) {
    if (i == unused_item) {
      txn.abort();  // a real rollback: district, order, new-order and earlier lines
      return result;
    }
    const NewOrderInput::Line& line = input.lines[i];
    const StockKey stock_key{line.supply_w_id, line.i_id};
    StockRow stock;
    if (!tables_.stock.get(txn, stock_key, stock)) {
      fail("tpcc: stock {}/{} is missing", line.supply_w_id, line.i_id);
    }
    StockCounters& counters = stock.counters;
    const auto quantity = static_cast<std::int32_t>(line.quantity);
    counters.quantity = counters.quantity >= quantity + 10 ? counters.quantity - quantity
                                                           : counters.quantity - quantity + 91;
    counters.ytd += line.quantity;
    counters.order_cnt += 1;
    counters.remote_cnt += line.supply_w_id != input.w_id ? 1 : 0;
    tables_.stock.update_part(txn, stock_key, 0, sizeof(StockCounters), &counters);

    // Brand-generic (B/G) is shown on the terminal only; computed for fidelity.
    [[maybe_unused]] const bool brand = contains_original(items[i].data, sizeof(items[i].data)) &&
                                        contains_original(stock.data, sizeof(stock.data));
    OrderLineRow order_line{};
    order_line.i_id = line.i_id;
    order_line.supply_w_id = line.supply_w_id;
    order_line.quantity = line.quantity;
    order_line.amount = static_cast<std::int64_t>(line.quantity) * items[i].price;
    std::memcpy(order_line.dist_info, stock.dist[input.d_id - 1], sizeof(order_line.dist_info));
    tables_.order_line.insert(txn, {input.w_id, input.d_id, o_id, i + 1}, order_line);
    sum += order_line.amount;
  }
  txn.commit();
  result.committed = true;
  result.o_id = o_id;
  result.total = static_cast<double>(sum) * (1.0 - customer.discount / 10000.0) *
                 (1.0 + (w_tax + district.tax) / 10000.0);
  return result;
}

std::uint32_t TpccTransactions::select_customer(const CustomerSelector& selector,
                                                Transaction* txn) {
  if (!selector.by_last_name) return selector.c_id;
  CustomerNameKey from{};
  from.w_id = selector.w_id;
  from.d_id = selector.d_id;
  std::memcpy(from.last, selector.last, sizeof(from.last));
  customers_with_last_name_.clear();
  const auto visit = [&](const CustomerNameKey& key, const CustomerNameRow& row) {
    if (key.w_id != from.w_id || key.d_id != from.d_id ||
        std::memcmp(key.last, from.last, sizeof(from.last)) != 0) {
      return false;
    }
    customers_with_last_name_.push_back(row.c_id);
    return true;
  };
  if (txn != nullptr)
    tables_.customer_by_name.scan(*txn, from, SIZE_MAX, visit);
  else
    tables_.customer_by_name.scan(from, SIZE_MAX, visit);
  if (customers_with_last_name_.empty()) {
    fail("tpcc: no customer named {} in district {}/{}", text_of(selector.last), selector.w_id,
         selector.d_id);
  }
  // The one at position ceil(n / 2) in first-name order.
  return customers_with_last_name_[(customers_with_last_name_.size() - 1) / 2];
}

PaymentResult TpccTransactions::payment(const PaymentInput& input) {
  Transaction txn = tables_.db->begin();
  // 1. Warehouse and district: add the payment to their year-to-date totals.
  WarehouseRow warehouse;
  if (!tables_.warehouse.get(txn, {input.w_id}, warehouse))
    fail("tpcc: no warehouse {}", input.w_id);
  warehouse.ytd += input.h_amount;
  tables_.warehouse.update_part(txn, {input.w_id}, TPCC_FIELD(WarehouseRow, ytd), &warehouse.ytd);
  const DistrictKey district_key{input.w_id, input.d_id};
  DistrictRow district;
  if (!tables_.district.get(txn, district_key, district)) {
    fail("tpcc: district {}/{} is missing", input.w_id, input.d_id);
  }
  district.ytd += input.h_amount;
  tables_.district.update_part(txn, district_key, TPCC_FIELD(DistrictRow, ytd), &district.ytd);

  // 2. The customer pays; a bad-credit customer's C_DATA records the payment.
  const CustomerSelector& selector = input.customer;
  const CustomerKey customer_key{selector.w_id, selector.d_id, select_customer(selector, &txn)};
  CustomerRow customer;
  if (!tables_.customer.get(txn, customer_key, customer)) {
    fail("tpcc: customer {}/{}/{} is missing", customer_key.w_id, customer_key.d_id,
         customer_key.c_id);
  }
  customer.account.balance -= input.h_amount;
  customer.account.ytd_payment += input.h_amount;
  customer.account.payment_cnt += 1;
  if (std::memcmp(customer.credit, "BC", 2) == 0) {
    char data[sizeof(customer.data)];
    const auto prefix = fmt::format_to_n(
        data, sizeof(data), "{} {} {} {} {} {}.{:02}|", customer_key.c_id, customer_key.d_id,
        customer_key.w_id, input.d_id, input.w_id, input.h_amount / 100, input.h_amount % 100);
    const std::size_t kept = sizeof(data) - std::min(prefix.size, sizeof(data));
    std::memcpy(data + sizeof(data) - kept, customer.data, kept);
    tables_.customer.update_part(txn, customer_key, offsetof(CustomerRow, data), sizeof(data),
                                 data);
  }
  tables_.customer.update_part(txn, customer_key, 0, sizeof(CustomerAccount), &customer.account);

  // 3. The history row: H_DATA is W_NAME, four spaces, D_NAME.
  HistoryRow history{};
  history.date = now();
  history.amount = input.h_amount;
  history.c_id = customer_key.c_id;
  history.c_d_id = customer_key.d_id;
  history.c_w_id = customer_key.w_id;
  history.d_id = input.d_id;
  history.w_id = input.w_id;
  fmt::format_to_n(history.data, sizeof(history.data), "{}    {}", text_of(warehouse.name),
                   text_of(district.name));
  tables_.history.insert(txn, {next_history_sequence_}, history);
  next_history_sequence_ += history_sequence_step_;
  txn.commit();
  return {customer_key.c_id, customer.account.balance};
}

OrderStatusResult TpccTransactions::order_status(const OrderStatusInput& input) {
  OrderStatusResult result;
  const CustomerSelector& selector = input.customer;
  result.c_id = select_customer(selector);
  struct {
    char middle[2], first[16], last[16];
  } names;
  static_assert(offsetof(CustomerRow, last) + sizeof(CustomerRow::last) -
                    offsetof(CustomerRow, middle) ==
                sizeof(names));
  const CustomerKey customer_key{selector.w_id, selector.d_id, result.c_id};
  CustomerAccount account;
  tables_.customer.get_part(customer_key, 0, sizeof(account), &account);
  tables_.customer.get_part(customer_key, offsetof(CustomerRow, middle), sizeof(names), &names);
  result.c_balance = account.balance;

  // The customer's newest order comes first in the index (inverted order ids).
  tables_.order_by_customer.scan(
      {selector.w_id, selector.d_id, result.c_id, 0}, 1,
      [&](const OrderByCustomerKey& key, const OrderByCustomerRow& row) {
        if (key.w_id == selector.w_id && key.d_id == selector.d_id && key.c_id == result.c_id) {
          result.o_id = row.o_id;
        }
        return false;
      });
  if (result.o_id == 0) return result;
  OrderRow order;
  tables_.order.get({selector.w_id, selector.d_id, result.o_id}, order);
  tables_.order_line.scan(
      {selector.w_id, selector.d_id, result.o_id, 0}, kMaxOrderLines,
      [&](const OrderLineKey& key, const OrderLineRow&) {
        if (key.w_id != selector.w_id || key.d_id != selector.d_id || key.o_id != result.o_id) {
          return false;
        }
        ++result.lines;
        return true;
      });
  return result;
}

DeliveryResult TpccTransactions::delivery(const DeliveryInput& input) {
  Transaction txn = tables_.db->begin();
  DeliveryResult result;
  const std::int64_t delivery_d = now();
  for (std::uint32_t d_id = 1; d_id <= kDistrictsPerWarehouse; ++d_id) {
    // 1. The district's oldest undelivered order, if any.
    std::uint32_t o_id = 0;
    tables_.new_order.scan(txn, {input.w_id, d_id, 0}, 1,
                           [&](const NewOrderKey& key, const NewOrderRow&) {
                             if (key.w_id == input.w_id && key.d_id == d_id) o_id = key.o_id;
                             return false;
                           });
    if (o_id == 0) continue;  // skipped: clause 2.7.4.2
    tables_.new_order.remove(txn, {input.w_id, d_id, o_id});

    // 2. Set its carrier, and the delivery date of its lines.
    const OrderKey order_key{input.w_id, d_id, o_id};
    std::uint32_t c_id = 0;
    tables_.order.get_part(txn, order_key, TPCC_FIELD(OrderRow, c_id), &c_id);
    tables_.order.update_part(txn, order_key, TPCC_FIELD(OrderRow, carrier_id), &input.carrier_id);
    std::int64_t sum = 0;
    lines_to_deliver_.clear();
    tables_.order_line.scan(txn, {input.w_id, d_id, o_id, 0}, kMaxOrderLines,
                            [&](const OrderLineKey& key, const OrderLineRow& row) {
                              if (key.w_id != input.w_id || key.d_id != d_id || key.o_id != o_id)
                                return false;
                              lines_to_deliver_.push_back(key);
                              sum += row.amount;
                              return true;
                            });
    for (const OrderLineKey& key : lines_to_deliver_) {
      tables_.order_line.update_part(txn, key, TPCC_FIELD(OrderLineRow, delivery_d), &delivery_d);
    }

    // 3. The customer is charged.
    const CustomerKey customer_key{input.w_id, d_id, c_id};
    CustomerAccount account;
    tables_.customer.get_part(txn, customer_key, 0, sizeof(account), &account);
    account.balance += sum;
    account.delivery_cnt += 1;
    tables_.customer.update_part(txn, customer_key, 0, sizeof(account), &account);
    ++result.delivered;
  }
  txn.commit();
  return result;
}

StockLevelResult TpccTransactions::stock_level(const StockLevelInput& input) {
  StockLevelResult result;
  std::uint32_t next_o_id = 0;
  tables_.district.get_part({input.w_id, input.d_id}, TPCC_FIELD(DistrictRow, next_o_id),
                            &next_o_id);
  // 1. The items of the district's last 20 orders, each once.
  const std::uint32_t first_o_id = next_o_id > 20 ? next_o_id - 20 : 1;
  recent_items_.clear();
  tables_.order_line.scan(
      {input.w_id, input.d_id, first_o_id, 0}, SIZE_MAX,
      [&](const OrderLineKey& key, const OrderLineRow& row) {
        if (key.w_id != input.w_id || key.d_id != input.d_id || key.o_id >= next_o_id) {
          return false;
        }
        recent_items_.push_back(row.i_id);
        return true;
      });
  std::sort(recent_items_.begin(), recent_items_.end());
  recent_items_.erase(std::unique(recent_items_.begin(), recent_items_.end()), recent_items_.end());
  // 2. Those with stock below the threshold.
  for (std::uint32_t i_id : recent_items_) {
    std::int32_t quantity = 0;
    tables_.stock.get_part({input.w_id, i_id}, offsetof(StockCounters, quantity), sizeof(quantity),
                           &quantity);
    result.low_stock += quantity < static_cast<std::int32_t>(input.threshold) ? 1 : 0;
  }
  return result;
}

#undef TPCC_FIELD

}  // namespace tristore::tpcc
