// The default reduceScatter (transports/transport.h): allReduce of the whole vector into host
// memory, then this rank's block. Correct wherever allReduce is, at twice a direct
// reduce-scatter's bytes; the transports of this library override it.
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "transports/collective_arguments.h"
#include "transports/transport.h"

namespace sccl {

scclResult_t Transport::reduceScatter(const void* send, void* recv, size_t recvcount,
                                      scclDataType_t dtype, ReduceOp op) {
  size_t block_bytes = 0;
  SCCL_CHECK(checkReduceScatterArguments(send, recv, recvcount, dtype, op, nranks(), &block_bytes));
  std::vector<unsigned char> reduced(block_bytes * static_cast<size_t>(nranks()));
  SCCL_CHECK(allReduce(send, reduced.data(), recvcount * static_cast<size_t>(nranks()), dtype, op));
  if (block_bytes > 0)
    std::memcpy(recv, reduced.data() + static_cast<size_t>(rank()) * block_bytes, block_bytes);
  return scclSuccess;
}

}  // namespace sccl
