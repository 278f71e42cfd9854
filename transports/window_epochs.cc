#include "transports/window_epochs.h"

#include "core/error.h"

namespace sccl {

scclResult_t WindowEpochs::requireRank(const char* operation, int target) const {
  SCCL_REQUIRE_ARG(target >= 0 && static_cast<size_t>(target) < locked_.size(),
                   "window %s: rank %d out of range [0, %zu)", operation, target, locked_.size());
  return scclSuccess;
}

scclResult_t WindowEpochs::requireEpoch(const char* operation, int target) const {
  SCCL_CHECK(requireRank(operation, target));
  if (!isOpen(static_cast<size_t>(target))) {
    return fail(scclInvalidUsage, "window %s to rank %d outside a lock/unlock epoch", operation,
                target);
  }
  return scclSuccess;
}

scclResult_t WindowEpochs::requireClosed(int target) const {
  SCCL_CHECK(requireRank("lock", target));
  if (isOpen(static_cast<size_t>(target))) {
    return fail(scclInvalidUsage, "window lock: an epoch to rank %d is already open", target);
  }
  return scclSuccess;
}

scclResult_t WindowEpochs::requireRange(const char* operation, size_t offset, size_t bytes) const {
  SCCL_REQUIRE_ARG(offset <= window_bytes_ && bytes <= window_bytes_ - offset,
                   "window %s of %zu bytes at offset %zu exceeds the window's %zu bytes", operation,
                   bytes, offset, window_bytes_);
  return scclSuccess;
}

}  // namespace sccl
