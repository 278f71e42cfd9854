// The search spaces of this build. A new space adds one line here, its file and a CMake line.
#include <string>

#include "core/error.h"
#include "partition/search_space.h"
#include "partition/search_space_factories.h"

namespace sccl {

const std::vector<SearchSpaceEntry>& searchSpaceRegistry() {
  static const std::vector<SearchSpaceEntry> entries = {
      {"whole", "every rank selects over the whole vector (Top-k, hard threshold)",
       createWholeSearchSpace},
      {"leader", "only rank t % n selects, over the whole vector (CLT-k)", createLeaderSearchSpace},
      {"micro", "n equal contiguous partitions, assigned cyclically (MiCRO)",
       createMicroSearchSpace},
      {"exdyna", "block partitions rebalanced by the selected counts, assigned cyclically (ExDyna)",
       createExDynaSearchSpace},
  };
  return entries;
}

scclResult_t makeSearchSpace(const std::string& name, const SearchSpaceParams& params,
                             std::unique_ptr<SearchSpace>* out) {
  SCCL_REQUIRE_ARG(out != nullptr, "makeSearchSpace: out is null");
  std::string known;
  for (const SearchSpaceEntry& entry : searchSpaceRegistry()) {
    if (name == entry.name) {
      SCCL_REQUIRE_ARG(params.nranks >= 1, "search space '%s': nranks must be >= 1 (got %d)",
                       entry.name, params.nranks);
      const std::string prefix = "search space '" + name + "': ";
      SCCL_CHECK(checkKnobs<SearchKnobs>(params, prefix.c_str()));
      return entry.create(params, out);
    }
    known += known.empty() ? "" : ", ";
    known += entry.name;
  }
  return fail(scclInvalidArgument, "unknown search space '%s' (known: %s)", name.c_str(),
              known.c_str());
}

}  // namespace sccl
