// scclSparsifierCreate and scclSparseAllreduce below the API, with what "auto" adds to each:
//  - creation: a named preset is resolved and built by the sparsifier layer; "auto" first chooses
//    among its candidates (tuning/auto_choice.h), each resolved once, and the chosen one's
//    resolved config builds the sparsifier, which then carries the choice;
//  - a call: on device buffers "auto" may first move to a preset with a device path
//    (tuning/auto_device.h), and after a host call its measurements may change the preset for the
//    next (tuning/auto_retune.h).
#pragma once

#include <cstddef>

#include "sparsecoll/sparsecoll.h"

struct scclComm;
struct scclSparsifier;

namespace sccl {

// Collective, as scclSparsifierCreate, with the arguments the API checks (handles, sizes) checked.
scclResult_t createSparsifier(scclComm* comm, size_t count, scclDataType_t dtype,
                              const scclSparseConfig_t& config, scclSparsifier** out);

// scclSparseAllreduce with its arguments checked and its buffers placed (on_device: GPU memory
// ordered on stream).
scclResult_t runSparseAllreduce(scclSparsifier* sp, const void* sendbuf, void* recvbuf,
                                scclRedOp_t op, bool on_device, void* stream);

}  // namespace sccl
