#pragma once
// The tristore-bench command line: registers every flag on a CLI11 app; after app.parse,
// finish() turns the raw values into validated BenchOptions.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "common/error.hpp"
#include "workloads/bench_options.hpp"

namespace tristore {

class BenchFlags {
 public:
  explicit BenchFlags(CLI::App& app);
  BenchOptions finish() const;  // throws Error (one line) on bad values or impossible sizes

 private:
  using Check = std::function<void(const std::string& flag, const std::string& text)>;
  // Runs `check` on each value given for the option, which throws Error (one line, leaving
  // app.parse as finish()'s errors leave finish). Each value, because a flag given twice keeps
  // its last value: CLI11 would drop a bad earlier one unseen, and name every value when the
  // last is bad ("Could not convert: --threads = 2,x").
  static CLI::Option* check_each(CLI::Option* option, Check check);
  // The value must convert to T, as CLI11 then converts the last one.
  template <typename T>
  static CLI::Option* converts_to(CLI::Option* option, const std::string& expected) {
    return check_each(option, [expected](const std::string& flag, const std::string& text) {
      T value{};
      if (!CLI::detail::lexical_cast(text, value))
        fail("{} must be {}, not {}", flag, expected, text);
    });
  }

  enum Sign { kPositive, kNonNegative };  // what the error message asks for
  // An unsigned integer flag; a negative value or another word is an Error thrown by app.parse.
  template <typename T>
  CLI::Option* add_unsigned(CLI::App& app, const std::string& name, T& value,
                            const std::string& description, Sign sign, bool show_default = true) {
    CLI::Option* option = app.add_option(name, value, description);
    if (show_default) option->capture_default_str();
    return check_unsigned<T>(option, sign);
  }
  template <typename T>
  static CLI::Option* check_unsigned(CLI::Option* option, Sign sign) {
    const std::string expected =
        sign == kPositive ? "a positive integer" : "a non-negative integer";
    // Checked on the text first: CLI11 wraps "-5" around to 18446744073709551611 for 64-bit
    // flags and fails without a word about the sign for others.
    check_each(option, [expected](const std::string& flag, const std::string& text) {
      const std::size_t first = text.find_first_not_of(" \t");
      if (first != std::string::npos && text[first] == '-')
        fail("{} must be {}, not {}", flag, expected, text);
    });
    return converts_to<T>(option, expected);
  }
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
