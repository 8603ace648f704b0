#include <gtest/gtest.h>

#include "common/error.hpp"
#include "engine/config.hpp"

using namespace tristore;

TEST(EngineConfig, ArchitectureNamesRoundTrip) {
  for (auto arch : {Architecture::kThreeTier, Architecture::kBasicNvm, Architecture::kNvmDirect,
                    Architecture::kSsdBm, Architecture::kMainMemory})
    EXPECT_EQ(parse_architecture(architecture_name(arch)), arch);
}

TEST(EngineConfig, UnknownArchitectureIsAnError) {
  EXPECT_THROW(parse_architecture("4tier"), Error);
}
