#include "workloads/bench_report.hpp"

#include <sys/resource.h>

#include <algorithm>

#include "workloads/key_chooser.hpp"
#include "workloads/tree_size_estimate.hpp"

namespace tristore {

nlohmann::json counters_json(const Counters& counters) {
  nlohmann::json json = nlohmann::json::object();
  counters.for_each([&json](const char* name, std::uint64_t value) { json[name] = value; });
  return json;
}

nlohmann::json memory_json(const MemoryUsage& memory) {
  return {{"dram_bytes", memory.dram_bytes},
          {"dram_limit_bytes", memory.dram_limit_bytes},
          {"page_table_bytes", memory.page_table_bytes},
          {"nvm_bytes", memory.nvm_bytes},
          {"ssd_bytes", memory.ssd_bytes}};
}

nlohmann::json derived_json(const PhaseResult& phase) {
  const Counters& c = phase.counters;
  const auto per_op = [&](std::uint64_t value) {
    return phase.ops > 0 ? static_cast<double>(value) / static_cast<double>(phase.ops) : 0.0;
  };
  return {{"log_bytes_per_op", per_op(c.log_bytes_written)},
          {"log_records_per_op", per_op(c.log_records)},
          {"nvm_data_lines_written",
           c.nvm_lines_written - c.nvm_log_lines_written - c.nvm_double_write_lines_written}};
}

nlohmann::json phase_json(const PhaseResult& phase) {
  return {{"seconds", phase.seconds},
          {"ops", phase.ops},
          {"ops_s", phase.seconds > 0 ? static_cast<double>(phase.ops) / phase.seconds : 0.0},
          {"ops_by_thread", phase.ops_by_thread},
          {"counters", counters_json(phase.counters)},
          {"derived", derived_json(phase)}};
}

void add_measured_json(nlohmann::json& result, const PhaseResult& measured) {
  const auto per_second = [&measured](std::uint64_t ops) {
    return measured.seconds > 0 ? static_cast<double>(ops) / measured.seconds : 0.0;
  };
  result["ops"] = measured.ops;
  result["seconds"] = measured.seconds;
  result["throughput_ops_s"] = per_second(measured.ops);
  result["ops_by_thread"] = measured.ops_by_thread;
  nlohmann::json by_thread = nlohmann::json::array();
  for (std::uint64_t ops : measured.ops_by_thread) by_thread.push_back(per_second(ops));
  result["throughput_by_thread_ops_s"] = by_thread;
  result["counters"] = counters_json(measured.counters);
  result["derived"] = derived_json(measured);
}

nlohmann::json config_json(const BenchOptions& options) {
  const Config& config = options.config;
  nlohmann::json json = {
      {"arch", architecture_name(config.architecture)},
      {"workload", options.workload_name},
      {"dram_bytes", config.dram_bytes},
      {"nvm_bytes", config.nvm_bytes},
      {"ssd_bytes", config.ssd_bytes},
      {"nvm_path", uses_nvm(config.architecture) ? config.nvm_path : ""},
      {"ssd_path", uses_ssd(config.architecture) ? config.ssd_path : ""},
      {"nvm_read_ns", config.nvm_read_ns},
      {"nvm_write_ns", config.nvm_write_ns},
      {"llc_bytes", config.llc_bytes},
      {"numa_node", config.numa_node},
      {"cache_line_grained", config.cache_line_grained},
      {"mini_pages", config.mini_pages},
      {"swizzling", config.swizzling},
      {"admission_set_size", config.admission_set_size},
      {"checkpoint_interval_bytes", config.checkpoint_interval_bytes},
      {"admit_while_free", config.admit_while_nvm_has_free_slots},
      {"ssd_write_behind_pages", config.ssd_write_behind_pages},
      {"nvm_weak_durability", config.nvm_weak_durability},
      {"nvm_wear_counting", config.nvm_wear_counting},
      {"threads", options.threads},
      {"warmup_seconds", options.warmup_seconds},
      {"seconds", options.ops == 0 ? options.seconds : 0.0},
      {"ops", options.ops},
      {"seed", options.ycsb.seed},
      {"restart", options.restart},
  };
  if (options.restart) {
    json["restart_seconds"] =
        options.restart_seconds > 0 ? options.restart_seconds : options.seconds;
    json["sample_seconds"] = options.sample_seconds;
  }
  if (options.workload == WorkloadKind::kTpcc) {
    json["warehouses"] = options.warehouses;
    return json;
  }
  const YcsbOptions& ycsb = options.ycsb;
  const KeyChooser chooser(ycsb.distribution, ycsb.records, ycsb.zipf_theta, ycsb.seed);
  json["records"] = ycsb.records;
  json["micro"] = ycsb.micro;
  json["key_bytes"] = ycsb_key_bytes(ycsb);
  json["value_bytes"] = ycsb_value_bytes(ycsb);
  json["distribution"] = distribution_name(ycsb.distribution);
  json["zipf_theta"] = chooser.effective_theta();
  json["update_ratio_percent"] =
      ycsb.kind == YcsbKind::kReadWrite ? ycsb.update_ratio_percent : 0.0;
  json["max_scan_length"] = ycsb.kind == YcsbKind::kScan ? ycsb.max_scan_length : 0;
  json["full_scan"] = ycsb.kind == YcsbKind::kScan && ycsb.full_scan;
  json["fill_factor"] = ycsb.fill_factor;
  return json;
}

std::uint64_t tree_bytes(const MemoryUsage& memory) {
  return std::max({memory.dram_bytes, memory.nvm_bytes, memory.ssd_bytes});
}

std::uint64_t peak_rss_bytes() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace tristore
