// Access-epoch bookkeeping and the argument checks every Window implementation shares
// (contract: transports/window.h), so that local, MPI and UCX windows report the same codes and
// messages: a target outside [0, nranks) or a range past the window is scclInvalidArgument, an
// access outside an epoch or a second lock of the same target is scclInvalidUsage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

class WindowEpochs {
 public:
  WindowEpochs(size_t nranks, size_t window_bytes)
      : locked_(nranks, 0), window_bytes_(window_bytes) {}

  scclResult_t requireRank(const char* operation, int target) const;
  // An epoch to target is open (put, putWord, flush, unlock; reads of the own window).
  scclResult_t requireEpoch(const char* operation, int target) const;
  // lock: target in range and no epoch to it open yet.
  scclResult_t requireClosed(int target) const;
  // [offset, offset + bytes) inside the window, without overflow.
  scclResult_t requireRange(const char* operation, size_t offset, size_t bytes) const;

  void setOpen(int target, bool open) { locked_[static_cast<size_t>(target)] = open ? 1 : 0; }
  bool isOpen(size_t target) const { return locked_[target] != 0; }
  size_t ranks() const { return locked_.size(); }

 private:
  std::vector<uint8_t> locked_;
  size_t window_bytes_;
};

}  // namespace sccl
