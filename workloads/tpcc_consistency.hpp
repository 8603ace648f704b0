#pragma once
// The consistency conditions of clause 3.3.2 over a TPC-C database.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/tpcc_tables.hpp"

namespace tristore::tpcc {

// Checks conditions 1-10 and 12 of clause 3.3.2 (11 holds only before any Delivery) and that
// the two secondary indexes agree with their tables. Returns one line per violation (at
// most 100), empty if the database is consistent. Reads every table once.
std::vector<std::string> check_consistency(const TpccTables& tables, std::uint32_t warehouses);

}  // namespace tristore::tpcc
