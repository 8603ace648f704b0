#pragma once
// Byte sizes as people write them on a command line: "200MiB", "1GiB", "512k", "4096".
#include <cstdint>
#include <string>
#include <string_view>

namespace tristore {

// Accepts a non-negative number (integer or decimal) followed by an optional unit: B, K/KB/KiB,
// M/MB/MiB, G/GB/GiB, T/TB/TiB (case-insensitive; all units are powers of 1024, as memory is
// sized). Throws Error with a one-line message on anything else or on overflow.
std::uint64_t parse_size(std::string_view text);

// The shortest exact spelling: 209715200 -> "200MiB", 1000 -> "1000B".
std::string format_size(std::uint64_t bytes);

// For people: one decimal in the largest unit below the size: 33554432 -> "32.0MiB".
std::string human_size(std::uint64_t bytes);

}  // namespace tristore
