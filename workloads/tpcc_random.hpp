#pragma once
// TPC-C random inputs (clause 2.1.6 and 4.3.2): uniform draws, NURand with its run-time
// constants, a- and n-strings, last names from the syllable table.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tristore::tpcc {

// splitmix64 as the generator: one word of state, so that a generator per row (seeded from
// the row's ids) is cheap and loading can regenerate any row without keeping it.
class TpccRandom {
 public:
  explicit TpccRandom(std::uint64_t seed) : state_(seed) {}

  // A seed for the generator of one row, from the run's seed, a stream id and the row's ids.
  static std::uint64_t derive(std::uint64_t seed, std::uint64_t stream, std::uint64_t a = 0,
                              std::uint64_t b = 0, std::uint64_t c = 0) {
    std::uint64_t s = seed ^ (stream * 0xd6e8feb86659fd93ULL);
    for (std::uint64_t v : {a, b, c}) {
      s = mix(s + v + 0x9e3779b97f4a7c15ULL);
    }
    return s;
  }

  std::uint64_t next() { return mix(state_ += 0x9e3779b97f4a7c15ULL); }

  // Uniform in [low, high].
  std::uint32_t uniform(std::uint32_t low, std::uint32_t high) {
    const std::uint64_t range = std::uint64_t{high} - low + 1;
    return low + static_cast<std::uint32_t>((static_cast<unsigned __int128>(next()) * range) >> 64);
  }

  // NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
  std::uint32_t nurand(std::uint32_t a, std::uint32_t x, std::uint32_t y, std::uint32_t c) {
    return (((uniform(0, a) | uniform(x, y)) + c) % (y - x + 1)) + x;
  }

  // Random alphanumeric text of length in [min_length, max_length], zero-filled to N.
  template <std::size_t N>
  std::size_t a_string(char (&field)[N], std::size_t min_length, std::size_t max_length) {
    static constexpr std::string_view kAlphabet =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    return fill(field, min_length, max_length, kAlphabet);
  }
  template <std::size_t N>
  std::size_t n_string(char (&field)[N], std::size_t min_length, std::size_t max_length) {
    return fill(field, min_length, max_length, "0123456789");
  }

 private:
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  template <std::size_t N>
  std::size_t fill(char (&field)[N], std::size_t min_length, std::size_t max_length,
                   std::string_view alphabet) {
    static_assert(N > 0);
    const std::size_t length = uniform(static_cast<std::uint32_t>(min_length),
                                       static_cast<std::uint32_t>(max_length < N ? max_length : N));
    for (std::size_t i = 0; i < length; ++i) {
      field[i] = alphabet[uniform(0, static_cast<std::uint32_t>(alphabet.size() - 1))];
    }
    std::memset(field + length, 0, N - length);
    return length;
  }

  std::uint64_t state_;
};

// The C of NURand per field (clause 2.1.6.1). C_LAST of the run must differ from the one
// used to load by a delta in [65, 119], neither 96 nor 112.
struct NuRandConstants {
  std::uint32_t c_last = 0;   // A = 255
  std::uint32_t c_id = 0;     // A = 1023
  std::uint32_t ol_i_id = 0;  // A = 8191

  static NuRandConstants for_load(TpccRandom& random) {
    return {random.uniform(0, 255), random.uniform(0, 1023), random.uniform(0, 8191)};
  }
  static NuRandConstants for_run(const NuRandConstants& load, TpccRandom& random) {
    NuRandConstants run{0, random.uniform(0, 1023), random.uniform(0, 8191)};
    do {
      run.c_last = random.uniform(0, 255);
    } while (!valid_c_last_delta(load.c_last, run.c_last));
    return run;
  }
  static bool valid_c_last_delta(std::uint32_t load, std::uint32_t run) {
    const std::uint32_t delta = load > run ? load - run : run - load;
    return delta >= 65 && delta <= 119 && delta != 96 && delta != 112;
  }
};

// C_LAST from a number in [0, 999]: one syllable per decimal digit (clause 4.3.2.3).
template <std::size_t N>
inline void last_name(std::uint32_t number, char (&field)[N]) {
  static_assert(N >= 15);  // three syllables of at most five letters
  static constexpr std::string_view kSyllables[10] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                                      "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  std::size_t length = 0;
  for (std::uint32_t digit : {number / 100, (number / 10) % 10, number % 10}) {
    std::memcpy(field + length, kSyllables[digit].data(), kSyllables[digit].size());
    length += kSyllables[digit].size();
  }
  std::memset(field + length, 0, N - length);
}

}  // namespace tristore::tpcc
