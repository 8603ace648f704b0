#pragma once
// One exception type for every error a user can cause: a bad flag, a size that cannot fit,
// a missing, foreign or corrupt file. Its message is one line, ready to print.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tristore {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tristore
