#pragma once
// Handles to the nine TPC-C tables and the two secondary indexes.
#include "engine/table.hpp"
#include "workloads/tpcc_schema.hpp"

namespace tristore::tpcc {

struct TpccTables {
  Table<WarehouseKey, WarehouseRow> warehouse;
  Table<DistrictKey, DistrictRow> district;
  Table<CustomerKey, CustomerRow> customer;
  Table<CustomerNameKey, CustomerNameRow> customer_by_name;
  Table<HistoryKey, HistoryRow> history;
  Table<NewOrderKey, NewOrderRow> new_order;
  Table<OrderKey, OrderRow> order;
  Table<OrderByCustomerKey, OrderByCustomerRow> order_by_customer;
  Table<OrderLineKey, OrderLineRow> order_line;
  Table<ItemKey, ItemRow> item;
  Table<StockKey, StockRow> stock;
  Database* db = nullptr;  // where the transactions begin

  // Creates the tables, named "tpcc.<table>"; Error if any exists.
  static TpccTables create(Database& db);
  // The tables of a reopened database; Error if any is missing.
  static TpccTables open(Database& db);
};

}  // namespace tristore::tpcc
