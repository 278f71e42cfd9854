// Process-wide directory of in-process jobs, keyed by the unique id's job token: the first rank
// to arrive creates the job, the others join it, and it disappears with its last rank.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "sparsecoll/sparsecoll.h"
#include "transports/local/local_job.h"

namespace sccl {

scclResult_t joinLocalJob(const std::array<uint8_t, 16>& token, int nranks,
                          std::shared_ptr<LocalJob>* job);

}  // namespace sccl
