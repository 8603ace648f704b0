// tristore-bench: the single entry point for every experiment (DESIGN.md section 8).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "common/error.hpp"
#include "engine/config.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tristore-bench: YCSB and TPC-C on the five architectures"};
  std::string arch = "3tier";
  app.add_option("--arch", arch, "3tier|basic-nvm|nvm-direct|ssd-bm|main-memory");
  try {
    app.parse(argc, argv);
    auto architecture = tristore::parse_architecture(arch);
    fmt::print("arch={}\n", tristore::architecture_name(architecture));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "tristore-bench: {}\n", e.what());
    return 2;
  } catch (const tristore::Error& e) {
    fmt::print(stderr, "tristore-bench: {}\n", e.what());
    return 2;
  }
  return 0;
}
