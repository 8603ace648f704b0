#pragma once
// The test-name suffix of an Architecture parameter: its name without dashes ("basicnvm").
//   INSTANTIATE_TEST_SUITE_P(Durable, Suite, testing::ValuesIn(kDurable), ArchitectureTestName{});
#include <string>

#include "engine/config.hpp"

namespace tristore::testing_support {

struct ArchitectureTestName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    std::string name(architecture_name(info.param));
    std::erase(name, '-');
    return name;
  }
};

}  // namespace tristore::testing_support
