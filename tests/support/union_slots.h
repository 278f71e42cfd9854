// Slots of the resident union call for tests of its plan (kernels/shared/union_plan.h): every
// rank's header, count and ascending indices drawn from half of the vector, so that the union
// has repeats; the padding zero.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/shared/union_plan.h"

namespace sccl_test {

constexpr size_t kUnionRanks = 4, kUnionCapacity = 5000, kUnionCount = 40000;

inline std::vector<uint64_t> unionSlots(uint64_t fingerprint, uint64_t sequence) {
  std::vector<uint64_t> slots(kUnionRanks * sccl::unionSlotWords(kUnionCapacity), 0);
  std::mt19937_64 random(17);
  for (size_t r = 0; r < kUnionRanks; ++r) {
    uint64_t* slot = slots.data() + r * sccl::unionSlotWords(kUnionCapacity);
    slot[sccl::kRecordFingerprint] = fingerprint;
    slot[sccl::kRecordSequence] = sequence;
    slot[sccl::kRecordReserved] = 0x3f000000u + r;
    const size_t k = kUnionCapacity - 37 * r;
    std::vector<uint64_t> picked;
    while (picked.size() < k) {
      for (size_t i = picked.size(); i < k; ++i) picked.push_back(random() % (kUnionCount / 2));
      std::sort(picked.begin(), picked.end());
      picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    }
    slot[sccl::kUnionSlotCount] = k;
    std::copy(picked.begin(), picked.end(), slot + sccl::kUnionSlotHeaderWords);
  }
  return slots;
}

}  // namespace sccl_test
