// Live-handle registry. Every opaque handle the library gives out (communicators now,
// sparsifiers later) is registered here until destroyed, so that an API call with a destroyed,
// foreign or garbage handle is answered with scclInvalidArgument instead of touching freed
// memory. Lookups only compare addresses; they never dereference the handle.
#pragma once

namespace sccl {

void registerHandle(const void* handle);
// Returns false if the handle was not live (double destroy).
bool unregisterHandle(const void* handle);
bool isLiveHandle(const void* handle);

}  // namespace sccl
