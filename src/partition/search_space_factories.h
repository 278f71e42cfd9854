// Constructors of the search spaces listed in the registry (search_space_registry.cc). Each
// checks the knobs it uses and reports a bad one as scclInvalidArgument naming it.
#pragma once

#include <memory>

#include "partition/search_space.h"

namespace sccl {

scclResult_t createWholeSearchSpace(const SearchSpaceParams& params,
                                    std::unique_ptr<SearchSpace>* out);
scclResult_t createLeaderSearchSpace(const SearchSpaceParams& params,
                                     std::unique_ptr<SearchSpace>* out);
scclResult_t createMicroSearchSpace(const SearchSpaceParams& params,
                                    std::unique_ptr<SearchSpace>* out);
scclResult_t createExDynaSearchSpace(const SearchSpaceParams& params,
                                     std::unique_ptr<SearchSpace>* out);

}  // namespace sccl
