// scclCommInitMpi in a build without MPI: a clear refusal (the symbol stays, so the ABI is the
// same with and without MPI); and MPI is never initialised as far as this build can tell.
#include "comm/comm.h"
#include "core/error.h"

namespace sccl {
scclResult_t commCreateFromMpi(const void*, const scclConfig_t*, scclComm**) {
  return fail(scclInvalidUsage,
              "this sparsecoll was built without MPI (configure with -DSCCL_ENABLE_MPI=ON)");
}

bool mpiInitialisedInThisProcess() { return false; }
}  // namespace sccl
