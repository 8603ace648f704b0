#pragma once
// The initial database population of clause 4.3.3.1, for `warehouses` warehouses.
//
// Every row's random fields come from a generator seeded by the row's ids, so each table is
// bulk-loaded on its own, in key order, without keeping the other tables' rows in memory.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "workloads/tpcc_random.hpp"
#include "workloads/tpcc_tables.hpp"

namespace tristore::tpcc {

struct TpccPopulation {
  std::uint32_t warehouses = 1;
  std::uint64_t seed = 42;
  NuRandConstants constants;  // C_LAST of the load is used for the customers' last names
  std::int64_t now = 0;       // the "current date/time" of the load
};

// Reported after each table is loaded.
struct TpccLoadStep {
  std::string_view table;
  std::uint64_t rows = 0;
  std::uint64_t bytes = 0;  // rows * (key + row size)
  std::size_t tables_done = 0;
  std::size_t tables_total = 0;
};
using TpccLoadProgress = std::function<void(const TpccLoadStep&)>;

struct TpccLoadTotals {
  std::uint64_t rows = 0;
  std::uint64_t bytes = 0;
  std::uint64_t history_rows = 0;  // the next history sequence number
};

// Fills the (empty) tables. Throws Error if a table refuses the load.
TpccLoadTotals load_population(TpccTables& tables, const TpccPopulation& population,
                               const TpccLoadProgress& progress);

}  // namespace tristore::tpcc
