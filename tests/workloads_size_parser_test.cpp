#include <gtest/gtest.h>

#include "common/error.hpp"
#include "workloads/size_parser.hpp"

using namespace tristore;

TEST(WorkloadsSizeParser, BinaryUnitsArePowersOf1024) {
  EXPECT_EQ(parse_size("200MiB"), 200ULL << 20);
  EXPECT_EQ(parse_size("1GiB"), 1ULL << 30);
  EXPECT_EQ(parse_size("5GiB"), 5ULL << 30);
  EXPECT_EQ(parse_size("512KiB"), 512ULL << 10);
  EXPECT_EQ(parse_size("2TiB"), 2ULL << 40);
}

TEST(WorkloadsSizeParser, ShortAndDecimalSpellingsMeanTheSame) {
  EXPECT_EQ(parse_size("512k"), 512ULL << 10);
  EXPECT_EQ(parse_size("200M"), 200ULL << 20);
  EXPECT_EQ(parse_size("200MB"), 200ULL << 20);
  EXPECT_EQ(parse_size("1g"), 1ULL << 30);
  EXPECT_EQ(parse_size("1gib"), 1ULL << 30);
  EXPECT_EQ(parse_size("1TB"), 1ULL << 40);
}

TEST(WorkloadsSizeParser, PlainNumbersAreBytes) {
  EXPECT_EQ(parse_size("4096"), 4096U);
  EXPECT_EQ(parse_size("10B"), 10U);
  EXPECT_EQ(parse_size("0"), 0U);
}

TEST(WorkloadsSizeParser, DecimalsRoundDownToBytes) {
  EXPECT_EQ(parse_size("1.5GiB"), 3ULL << 29);
  EXPECT_EQ(parse_size("0.5KiB"), 512U);
  EXPECT_EQ(parse_size("1.0001B"), 1U);
}

TEST(WorkloadsSizeParser, MalformedSizesAreErrors) {
  for (const char* bad : {"", "abc", "MiB", "-1", "12XB", "1.2.3MiB", "1 GiB", "1GiBs", "1e3"})
    EXPECT_THROW(parse_size(bad), Error) << "accepted '" << bad << "'";
}

TEST(WorkloadsSizeParser, OverflowIsAnError) {
  EXPECT_THROW(parse_size("99999999999TiB"), Error);
  EXPECT_THROW(parse_size("18446744073709551616"), Error);
  EXPECT_THROW(parse_size("16777216TiB"), Error);
  EXPECT_EQ(parse_size("16777215TiB"), 16777215ULL << 40);
}

TEST(WorkloadsSizeParser, ErrorMessageIsOneLineNamingTheInput) {
  try {
    parse_size("12XB");
    FAIL() << "no error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("12XB"), std::string::npos);
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(WorkloadsSizeParser, HumanSizeShowsOneDecimalInTheLargestUnit) {
  EXPECT_EQ(human_size(512), "512B");
  EXPECT_EQ(human_size(1536), "1.5KiB");
  EXPECT_EQ(human_size(32ULL << 20), "32.0MiB");
  EXPECT_EQ(human_size(5ULL << 40), "5.0TiB");
}

TEST(WorkloadsSizeParser, FormatPicksTheLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(format_size(200ULL << 20), "200MiB");
  EXPECT_EQ(format_size(1ULL << 30), "1GiB");
  EXPECT_EQ(format_size(1536ULL << 20), "1536MiB");
  EXPECT_EQ(format_size(1000), "1000B");
  EXPECT_EQ(format_size(0), "0B");
  for (std::uint64_t bytes : {0ULL, 1ULL, 1000ULL, 4096ULL, 3ULL << 29, 7ULL << 40})
    EXPECT_EQ(parse_size(format_size(bytes)), bytes);
}
