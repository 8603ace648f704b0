#include "workloads/tpcc_tables.hpp"

namespace tristore::tpcc {

TpccTables TpccTables::create(Database& db) {
  return TpccTables{
      db.create_table<WarehouseKey, WarehouseRow>("tpcc.warehouse"),
      db.create_table<DistrictKey, DistrictRow>("tpcc.district"),
      db.create_table<CustomerKey, CustomerRow>("tpcc.customer"),
      db.create_table<CustomerNameKey, CustomerNameRow>("tpcc.customer_by_name"),
      db.create_table<HistoryKey, HistoryRow>("tpcc.history"),
      db.create_table<NewOrderKey, NewOrderRow>("tpcc.new_order"),
      db.create_table<OrderKey, OrderRow>("tpcc.order"),
      db.create_table<OrderByCustomerKey, OrderByCustomerRow>("tpcc.order_by_customer"),
      db.create_table<OrderLineKey, OrderLineRow>("tpcc.order_line"),
      db.create_table<ItemKey, ItemRow>("tpcc.item"),
      db.create_table<StockKey, StockRow>("tpcc.stock"),
      &db,
  };
}

TpccTables TpccTables::open(Database& db) {
  return TpccTables{
      db.open_table<WarehouseKey, WarehouseRow>("tpcc.warehouse"),
      db.open_table<DistrictKey, DistrictRow>("tpcc.district"),
      db.open_table<CustomerKey, CustomerRow>("tpcc.customer"),
      db.open_table<CustomerNameKey, CustomerNameRow>("tpcc.customer_by_name"),
      db.open_table<HistoryKey, HistoryRow>("tpcc.history"),
      db.open_table<NewOrderKey, NewOrderRow>("tpcc.new_order"),
      db.open_table<OrderKey, OrderRow>("tpcc.order"),
      db.open_table<OrderByCustomerKey, OrderByCustomerRow>("tpcc.order_by_customer"),
      db.open_table<OrderLineKey, OrderLineRow>("tpcc.order_line"),
      db.open_table<ItemKey, ItemRow>("tpcc.item"),
      db.open_table<StockKey, StockRow>("tpcc.stock"),
      &db,
  };
}

}  // namespace tristore::tpcc
