// The one table of presets and the one table of reductions. A new algorithm adds a row here,
// its file, and a line in CMakeLists.txt.
#include <cstring>

#include "algorithms/algorithm.h"
#include "algorithms/reductions.h"
#include "algorithms/sent_mask.h"

namespace sccl {

const std::vector<PresetEntry>& presetRegistry() {
  static const std::vector<PresetEntry> presets = {
      {"dense", "plain all-reduce of the whole gradient (the baseline)", "fixed", "whole", "dense",
       "none"},
      {"topk", "every rank sends its exact top-k of the whole vector (gradient build-up)", "topk",
       "whole", "gather", "none"},
      {"cltk", "the leader (t mod n) picks the top-k indices for everyone", "topk", "leader",
       "gather", "none"},
      {"hard_threshold", "fixed threshold on the whole vector", "fixed", "whole", "gather", "none"},
      {"micro", "MiCRO: exclusive equal partitions, threshold scaling", "scaling", "micro",
       "gather", "histogram"},
      {"exdyna", "ExDyna: exclusive block partitions with rebalancing, threshold scaling",
       "scaling", "exdyna", "gather", "histogram"},
      {"sidco", "SIDCo: every rank selects above a multi-stage exponential fit (whole vector)",
       "sidco_exp", "whole", "gather", "none"},
      {"s2", "S2 Reducer: block bitmap and count sketch, both all-reduced, median decode", "topk",
       "whole", "sketch", "none"},
      {"micro_sync_free", "MiCRO partitions, fixed per-rank capacity: no count exchange", "scaling",
       "micro", "sync_free", "none"},
      {"exdyna_sync_free", "ExDyna partitions, fixed per-rank capacity: no count exchange",
       "scaling", "exdyna", "sync_free", "none"},
  };
  return presets;
}

const std::vector<ReductionEntry>& reductionRegistry() {
  static const std::vector<ReductionEntry> reductions = {
      {"dense", "all-reduce of the whole gradient", false, runDenseReduction, nullptr, false, false,
       maskEverything},
      {"gather", "count all-gather, padded index all-gather, value all-reduce", true,
       runGatherReduction, nullptr, true, true, maskGlobalIndices},
      {"sketch", "block bitmap (uint8 max) and count sketch (sum) all-reduce, median decode", true,
       runSketchReduction, prepareSketchReduction, true, true, maskSketchBlocks},
      {"sync_free", "padded index all-gather and value all-reduce of a fixed capacity", true,
       runSyncFreeReduction, prepareSyncFreeReduction, true, true, maskGlobalIndices},
  };
  return reductions;
}

const PresetEntry* findPreset(const char* name) {
  for (const PresetEntry& entry : presetRegistry()) {
    if (std::strcmp(entry.name, name) == 0) return &entry;
  }
  return nullptr;
}

const ReductionEntry* findReduction(const char* name) {
  for (const ReductionEntry& entry : reductionRegistry()) {
    if (std::strcmp(entry.name, name) == 0) return &entry;
  }
  return nullptr;
}

}  // namespace sccl
