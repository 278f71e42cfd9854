// What the "hierarchy": "node" tests share (test_node_hierarchy*.cc, test_auto_hierarchy.cc): the
// check that the process groups its in-process ranks into nodes of two (the CTest
// node_hierarchy_local sets SCCL_RANKS_PER_NODE=2, read once per process), each rank's gradient,
// and a config from JSON.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "sparsecoll/sparsecoll.h"

namespace sccl_test {

inline constexpr int kRanksPerNode = 2;

inline void requireNodesOfTwo() {
  const char* setting = std::getenv("SCCL_RANKS_PER_NODE");
  REQUIRE(setting != nullptr);
  REQUIRE(std::string(setting) == std::to_string(kRanksPerNode));
}

// Rank r's gradient element i at call t: varied magnitudes, so the summation order shows in the
// bits.
inline float nodeTestGradient(int rank, int call, size_t i) {
  const uint32_t h = uint32_t(i * 2654435761u) ^ uint32_t(rank * 40503 + call * 977);
  const float magnitude = float(1u << (h % 13));
  return (float(int(h >> 8) % 2001) - 1000.0f) / 1000.0f / magnitude;
}

inline scclSparseConfig_t configOf(const char* json) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  REQUIRE(scclSparseConfigFromJson(json, &config) == scclSuccess);
  return config;
}

}  // namespace sccl_test
