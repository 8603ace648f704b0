#pragma once
// The tristore-bench command line: registers every flag on a CLI11 app; after app.parse,
// finish() turns the raw values into validated BenchOptions.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "workloads/bench_options.hpp"

namespace tristore {

class BenchFlags {
 public:
  explicit BenchFlags(CLI::App& app);
  BenchOptions finish() const;  // throws Error (one line) on bad values or impossible sizes

 private:
  enum Sign { kPositive, kNonNegative };  // what the error message asks for
  // An unsigned integer flag; a negative value is an Error thrown by app.parse.
  template <typename T>
  CLI::Option* add_unsigned(CLI::App& app, const std::string& name, T& value,
                            const std::string& description, Sign sign, bool show_default = true) {
    CLI::Option* option = app.add_option(name, value, description);
    if (show_default) option->capture_default_str();
    return refuse_negative(option, sign);
  }
  static CLI::Option* refuse_negative(CLI::Option* option, Sign sign);
  // Throws Error (one line) for a flag given explicitly that the chosen run would ignore.
  void refuse_flags_that_do_not_apply(const BenchOptions& options) const;

  const CLI::App* app_;  // what was given on the command line, for count()

  BenchOptions defaults_;
  std::string arch_ = "3tier";
  std::string workload_ = "ycsb-ro";
  std::string distribution_ = "zipf";
  std::string dram_ = "200MiB";
  std::string nvm_ = "1GiB";
  std::string ssd_ = "5GiB";
  std::string llc_ = "0";
  std::string checkpoint_interval_ = "0";
  std::string nvm_path_;
  std::string ssd_path_;
  bool replace_files_ = false;
  bool no_cl_grained_ = false;
  bool no_mini_pages_ = false;
  bool no_swizzling_ = false;
  bool quiet_ = false;
  double sample_ms_ = 100;
  CLI::Option* seconds_option_ = nullptr;
  CLI::Option* ops_option_ = nullptr;
};

}  // namespace tristore
