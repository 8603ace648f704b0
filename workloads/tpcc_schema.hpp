#pragma once
// The nine TPC-C tables (clause 1.3) and two secondary indexes as fixed-size keys and rows.
// Money is held in cents and rates (tax, discount) in units of 1/10000, so that the
// consistency conditions can be checked exactly. Dates are seconds since the epoch; 0 is null.
// Keys order their fields most significant first and have no padding, so the defaulted
// comparison is the primary-key order.
#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace tristore::tpcc {

inline constexpr std::uint32_t kDistrictsPerWarehouse = 10;
inline constexpr std::uint32_t kCustomersPerDistrict = 3000;
inline constexpr std::uint32_t kItems = 100000;
inline constexpr std::uint32_t kInitialOrdersPerDistrict = 3000;
inline constexpr std::uint32_t kInitialNewOrdersPerDistrict = 900;  // the last 900 orders
inline constexpr std::uint32_t kFirstUndeliveredOrder =
    kInitialOrdersPerDistrict - kInitialNewOrdersPerDistrict + 1;  // 2101
inline constexpr std::uint32_t kMinOrderLines = 5;
inline constexpr std::uint32_t kMaxOrderLines = 15;
inline constexpr std::uint32_t kNoCarrier = 0;

// Copies `text` into a fixed field, zero-filling the rest (so equal texts compare equal).
template <std::size_t N>
inline void set_text(char (&field)[N], std::string_view text) {
  const std::size_t n = std::min(N, text.size());
  std::memcpy(field, text.data(), n);
  std::memset(field + n, 0, N - n);
}
template <std::size_t N>
inline std::string_view text_of(const char (&field)[N]) {
  return std::string_view(field, ::strnlen(field, N));
}

struct WarehouseKey {
  std::uint32_t w_id;
  auto operator<=>(const WarehouseKey&) const = default;
};
struct WarehouseRow {
  std::int64_t ytd;  // cents
  std::int32_t tax;  // 1/10000
  char name[10];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
};

struct DistrictKey {
  std::uint32_t w_id, d_id;
  auto operator<=>(const DistrictKey&) const = default;
};
struct DistrictRow {
  std::int64_t ytd;  // cents
  std::uint32_t next_o_id;
  std::int32_t tax;  // 1/10000
  char name[10];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
};

struct CustomerKey {
  std::uint32_t w_id, d_id, c_id;
  auto operator<=>(const CustomerKey&) const = default;
};
// The fields Payment and Delivery update, together at the front of the row so that they
// are read and written with one part access.
struct CustomerAccount {
  std::int64_t balance;      // cents
  std::int64_t ytd_payment;  // cents
  std::uint32_t payment_cnt;
  std::uint32_t delivery_cnt;
};
struct CustomerRow {
  CustomerAccount account;
  std::int64_t credit_lim;  // cents
  std::int64_t since;
  std::int32_t discount;  // 1/10000
  char credit[2];         // "GC" or "BC"
  char middle[2];
  char first[16];
  char last[16];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
  char phone[16];
  char data[500];
};

// Customers by last name (clause 2.5.2.2): ordered by first name within a last name.
struct CustomerNameKey {
  std::uint32_t w_id, d_id;
  char last[16];
  char first[16];
  std::uint32_t c_id;
  auto operator<=>(const CustomerNameKey&) const = default;
};
struct CustomerNameRow {
  std::uint32_t c_id;
};

// HISTORY has no primary key; rows are numbered in insertion order.
struct HistoryKey {
  std::uint64_t sequence;
  auto operator<=>(const HistoryKey&) const = default;
};
struct HistoryRow {
  std::int64_t date;
  std::int64_t amount;  // cents
  std::uint32_t c_id, c_d_id, c_w_id, d_id, w_id;
  char data[24];
};

struct NewOrderKey {
  std::uint32_t w_id, d_id, o_id;
  auto operator<=>(const NewOrderKey&) const = default;
};
struct NewOrderRow {
  std::uint8_t present;  // the key is the whole row
};

struct OrderKey {
  std::uint32_t w_id, d_id, o_id;
  auto operator<=>(const OrderKey&) const = default;
};
struct OrderRow {
  std::int64_t entry_d;
  std::uint32_t c_id;
  std::uint32_t carrier_id;  // kNoCarrier: null
  std::uint32_t ol_cnt;
  std::uint32_t all_local;
};

// A customer's orders, newest first (Order-Status reads the newest): o_id is stored inverted.
struct OrderByCustomerKey {
  std::uint32_t w_id, d_id, c_id, inverted_o_id;
  auto operator<=>(const OrderByCustomerKey&) const = default;
};
inline constexpr std::uint32_t invert_order_id(std::uint32_t o_id) { return ~o_id; }
struct OrderByCustomerRow {
  std::uint32_t o_id;
};

struct OrderLineKey {
  std::uint32_t w_id, d_id, o_id, number;
  auto operator<=>(const OrderLineKey&) const = default;
};
struct OrderLineRow {
  std::int64_t delivery_d;  // 0: null
  std::int64_t amount;      // cents
  std::uint32_t i_id;
  std::uint32_t supply_w_id;
  std::uint32_t quantity;
  char dist_info[24];
};

struct ItemKey {
  std::uint32_t i_id;
  auto operator<=>(const ItemKey&) const = default;
};
struct ItemRow {
  std::int64_t price;  // cents
  std::uint32_t im_id;
  char name[24];
  char data[50];
};

struct StockKey {
  std::uint32_t w_id, i_id;
  auto operator<=>(const StockKey&) const = default;
};
// The fields New-Order updates, together at the front of the row.
struct StockCounters {
  std::int32_t quantity;
  std::uint32_t ytd;
  std::uint32_t order_cnt;
  std::uint32_t remote_cnt;
};
struct StockRow {
  StockCounters counters;
  char dist[kDistrictsPerWarehouse][24];  // S_DIST_01 .. S_DIST_10
  char data[50];
};

// Keys are compared field by field and may be compared or hashed as bytes by a table, so
// they must have no padding.
static_assert(std::has_unique_object_representations_v<WarehouseKey>);
static_assert(std::has_unique_object_representations_v<DistrictKey>);
static_assert(std::has_unique_object_representations_v<CustomerKey>);
static_assert(std::has_unique_object_representations_v<CustomerNameKey>);
static_assert(std::has_unique_object_representations_v<HistoryKey>);
static_assert(std::has_unique_object_representations_v<NewOrderKey>);
static_assert(std::has_unique_object_representations_v<OrderKey>);
static_assert(std::has_unique_object_representations_v<OrderByCustomerKey>);
static_assert(std::has_unique_object_representations_v<OrderLineKey>);
static_assert(std::has_unique_object_representations_v<ItemKey>);
static_assert(std::has_unique_object_representations_v<StockKey>);
static_assert(offsetof(CustomerRow, account) == 0 && offsetof(StockRow, counters) == 0);

}  // namespace tristore::tpcc
