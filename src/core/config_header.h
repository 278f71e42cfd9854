// The header of the versioned public config structs (scclConfig_t, scclSparseConfig_t,
// scclEventConfig_t): `size` and `version` as the caller compiled them. The rule, the same for
// all three (docs/api.md, "Config structs"):
//   - version is a released sparsecoll version no newer than this library:
//     SCCL_VERSION(0, 1, 0) <= version <= SCCL_VERSION_CODE. A newer header may have fields this
//     library would ignore, so it is refused rather than half-honoured;
//   - size is between the struct of the first release (0.1.0: every field up to the one named
//     by the caller) and this library's sizeof. Fields are append-only, so a shorter struct from
//     an older header is read up to its size and the rest takes the defaults.
// Anything else (0, UINT_MAX, SIZE_MAX, a size from a newer header) is scclInvalidArgument.
#pragma once

#include <cstddef>

#include "core/error.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// The first release that had the config structs.
constexpr unsigned kFirstConfigVersion = SCCL_VERSION(0, 1, 0);

inline scclResult_t checkConfigVersionAndSize(const char* what, size_t size, unsigned version,
                                              size_t first_release_size, size_t library_size) {
  SCCL_REQUIRE_ARG(version >= kFirstConfigVersion && version <= SCCL_VERSION_CODE,
                   "%s version %u is not a sparsecoll release this library accepts (%u .. %u, "
                   "i.e. 0.1.0 up to this library; a newer header needs a newer library)",
                   what, version, kFirstConfigVersion, unsigned(SCCL_VERSION_CODE));
  SCCL_REQUIRE_ARG(size >= first_release_size && size <= library_size,
                   "%s size %zu is outside [%zu, %zu] (the struct of the first release up to this "
                   "library's)",
                   what, size, first_release_size, library_size);
  return scclSuccess;
}

}  // namespace sccl
