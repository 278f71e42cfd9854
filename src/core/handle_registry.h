// Live-handle registry. Every opaque handle the library gives out (communicators, sparsifiers,
// event communicators) is registered here with its kind (the type's magic) until destroyed, so
// that an API call with a destroyed, foreign, garbage or wrongly typed handle (a sparsifier
// passed where a communicator is expected) is answered with scclInvalidArgument instead of
// touching freed memory or an object of another type. Lookups compare the address and the kind;
// they never dereference the handle.
#pragma once

#include <cstdint>

namespace sccl {

void registerHandle(const void* handle, uint64_t kind);
// Returns false if the handle was not live (double destroy).
bool unregisterHandle(const void* handle);
// True if `handle` is live and was registered with `kind`.
bool isLiveHandle(const void* handle, uint64_t kind);

}  // namespace sccl
