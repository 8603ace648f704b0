#pragma once
// Identifiers that tell one database's files from another's: random, never 0 (0 means "any").
#include <cstdint>
#include <random>

namespace tristore {

inline std::uint64_t random_nonzero_id() {
  std::random_device device;
  std::uint64_t id = 0;
  while (id == 0) id = (std::uint64_t{device()} << 32) | device();
  return id;
}

}  // namespace tristore
