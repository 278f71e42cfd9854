// Argument checks shared by the entry points that take buffers. Each fails with
// scclInvalidArgument (or scclInvalidUsage for what this build cannot do) before anything is
// touched, so a rejected call has no side effect.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "comm/comm.h"
#include "core/device_collectives.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/memory_space.h"

namespace sccl {

// The integer a C caller stored in an enum parameter, read without an enum-typed load: C may
// pass any int, and loading an out-of-range value as a C++ enum is undefined behaviour.
template <typename Enum>
int enumBits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "ABI enums are int-sized");
  int bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// The `size` a caller set in a statistics struct before a Get*Stats call. The structs grow by
// appending fields, so the smallest valid size is the first release's struct; a smaller one (an
// uninitialised struct, typically) used to get a silent partial copy. A larger one, up to a bound
// no real struct reaches, is a newer header's: it gets the fields this library has, and `size`
// is set to how many bytes that is.
inline scclResult_t requireStatsSize(const char* type_name, size_t size,
                                     size_t first_release_size) {
  constexpr size_t kLargestPlausibleStatsSize = 4096;
  SCCL_REQUIRE_ARG(size >= first_release_size && size <= kLargestPlausibleStatsSize,
                   "stats->size %zu is not a %s's (at least %zu): zero the struct and set size = "
                   "sizeof(%s) before the call",
                   size, type_name, first_release_size, type_name);
  return scclSuccess;
}

inline scclResult_t requireDataType(const scclDataType_t& dtype) {
  SCCL_REQUIRE_ARG(isValidDataType(enumBits(dtype)), "unknown data type %d", enumBits(dtype));
  return scclSuccess;
}

inline scclResult_t requireRedOp(const scclRedOp_t& op) {
  int bits = enumBits(op);
  SCCL_REQUIRE_ARG(bits >= 0 && bits < scclNumOps, "unknown reduction op %d", bits);
  return scclSuccess;
}

// A sparse all-reduce adds the ranks' selected entries (and error feedback keeps what was not
// sent for a later sum); a maximum or minimum of partially sent vectors has no such meaning.
inline scclResult_t requireSparseRedOp(const scclRedOp_t& op) {
  SCCL_CHECK(requireRedOp(op));
  SCCL_REQUIRE_ARG(op == scclSum || op == scclAvg,
                   "a sparse all-reduce takes scclSum or scclAvg, not %s (scclMax and scclMin are "
                   "for the dense collectives)",
                   op == scclMax ? "scclMax" : "scclMin");
  return scclSuccess;
}

// The transports' reduction for a public op: scclAvg is a sum that the API then divides.
inline ReduceOp transportReduceOp(scclRedOp_t op) {
  if (op == scclMax) return ReduceOp::Max;
  if (op == scclMin) return ReduceOp::Min;
  return ReduceOp::Sum;
}

// The largest buffer any call takes: 2^56 bytes (64 PiB), above every 64-bit user address space
// of today (x86-64 with 5-level paging: 2^56; AArch64: 2^52). A larger size cannot name real
// memory, so it is refused before anything is allocated or any peer is contacted, instead of
// failing later as out of memory or a fault (docs/api.md, "Limits").
constexpr size_t kMaxBufferBytes = size_t{1} << 56;

inline scclResult_t requireBufferBytes(size_t bytes, const char* what) {
  SCCL_REQUIRE_ARG(bytes <= kMaxBufferBytes,
                   "%s of %zu bytes exceeds the largest buffer sparsecoll accepts (2^56 bytes)",
                   what, bytes);
  return scclSuccess;
}

// count elements of dtype: checks the type, that the byte size fits in size_t and that it is at
// most kMaxBufferBytes.
inline scclResult_t requireByteSize(size_t count, const scclDataType_t& dtype, size_t* bytes) {
  SCCL_CHECK(requireDataType(dtype));
  SCCL_REQUIRE_ARG(byteSize(count, dtype, bytes), "count %zu of %s overflows the address space",
                   count, dataTypeName(dtype));
  SCCL_REQUIRE_ARG(*bytes <= kMaxBufferBytes,
                   "count %zu of %s is %zu bytes, beyond the largest buffer sparsecoll accepts "
                   "(2^56 bytes)",
                   count, dataTypeName(dtype), *bytes);
  return scclSuccess;
}

// sendbuf and recvbuf either do not overlap or sendbuf is exactly the in-place slot of recvbuf
// (recvbuf + slot_offset): a partial overlap would read bytes the call has already overwritten.
inline scclResult_t requireNoPartialOverlap(const void* send, size_t send_bytes, const void* recv,
                                            size_t recv_bytes, size_t slot_offset) {
  if (send_bytes == 0 || recv_bytes == 0 || send == nullptr || recv == nullptr) {
    return scclSuccess;
  }
  const auto s = reinterpret_cast<uintptr_t>(send);
  const auto r = reinterpret_cast<uintptr_t>(recv);
  const bool overlap = s < r + recv_bytes && r < s + send_bytes;
  if (!overlap || s == r + slot_offset) return scclSuccess;
  return fail(scclInvalidArgument,
              "sendbuf [%p, +%zu) overlaps recvbuf [%p, +%zu) but is not the in-place position "
              "recvbuf + %zu: buffers must be disjoint or exactly in place",
              send, send_bytes, recv, recv_bytes, slot_offset);
}

// A buffer the host kernels and transports can use: non-null unless empty, host memory, and no
// stream (streams order device work; host calls complete before returning).
inline scclResult_t requireHostBuffer(const void* buffer, size_t bytes, const char* what,
                                      void* stream) {
  if (bytes == 0) return scclSuccess;
  SCCL_REQUIRE_ARG(buffer != nullptr, "%s is NULL", what);
  if (memorySpaceOf(buffer) == MemorySpace::Device) {
    return fail(scclInvalidUsage,
                "%s is GPU memory, but this build's kernels and transports work on host memory",
                what);
  }
  SCCL_REQUIRE_ARG(stream == nullptr, "stream must be NULL for host buffers (%s)", what);
  return scclSuccess;
}

// Where the buffers of a call live: both host memory (then stream must be NULL) or both GPU
// memory (*on_device; one of each is scclInvalidArgument). A buffer of 0 bytes is neither.
inline scclResult_t placeBuffers(const void* send, size_t send_bytes, const void* recv,
                                 size_t recv_bytes, void* stream, bool* on_device) {
  const bool send_device =
      send_bytes > 0 && send != nullptr && memorySpaceOf(send) == MemorySpace::Device;
  const bool recv_device =
      recv_bytes > 0 && recv != nullptr && memorySpaceOf(recv) == MemorySpace::Device;
  *on_device = send_device || recv_device;
  if (!*on_device) {
    SCCL_CHECK(requireHostBuffer(send, send_bytes, "sendbuf", stream));
    return requireHostBuffer(recv, recv_bytes, "recvbuf", stream);
  }
  SCCL_REQUIRE_ARG((send_device || send_bytes == 0) && (recv_device || recv_bytes == 0),
                   "sendbuf is %s memory but recvbuf is %s memory: both must be GPU memory or "
                   "both host memory",
                   send_device ? "GPU" : "host", recv_device ? "GPU" : "host");
  return scclSuccess;
}

// The buffers of a dense collective (placeBuffers); GPU buffers also need a transport that
// carries them (core/device_collectives.h: the caller's stream is then synchronised first).
// Both sizes are at most kMaxBufferBytes, and the buffers are disjoint or in place: recvbuf +
// rank * send_bytes when recvbuf holds one send_bytes slot per rank (all-gather), recvbuf
// itself otherwise (all-reduce, broadcast).
inline scclResult_t requireCollectiveBuffers(scclComm* comm, const void* send, size_t send_bytes,
                                             const void* recv, size_t recv_bytes, void* stream,
                                             bool* on_device) {
  SCCL_CHECK(requireBufferBytes(send_bytes, "sendbuf"));
  SCCL_CHECK(requireBufferBytes(recv_bytes, "recvbuf"));
  size_t slots_bytes = 0;
  const bool one_slot_per_rank =
      comm->nranks > 1 && !__builtin_mul_overflow(send_bytes, size_t(comm->nranks), &slots_bytes) &&
      slots_bytes == recv_bytes;
  const size_t slot_offset = one_slot_per_rank ? size_t(comm->rank) * send_bytes : 0;
  SCCL_CHECK(requireNoPartialOverlap(send, send_bytes, recv, recv_bytes, slot_offset));
  SCCL_CHECK(placeBuffers(send, send_bytes, recv, recv_bytes, stream, on_device));
  return *on_device ? prepareDeviceCollective(comm, stream) : scclSuccess;
}

// The buffers of a reduce-scatter: sendbuf holds nranks blocks of recv_bytes; they are disjoint or
// in place, recvbuf == sendbuf + rank * recv_bytes; then as requireCollectiveBuffers.
inline scclResult_t requireReduceScatterBuffers(scclComm* comm, const void* send, size_t send_bytes,
                                                const void* recv, size_t recv_bytes, void* stream,
                                                bool* on_device) {
  SCCL_CHECK(requireBufferBytes(send_bytes, "sendbuf"));
  SCCL_CHECK(requireBufferBytes(recv_bytes, "recvbuf"));
  if (send_bytes > 0 && recv_bytes > 0 && send != nullptr && recv != nullptr) {
    const auto s = reinterpret_cast<uintptr_t>(send);
    const auto r = reinterpret_cast<uintptr_t>(recv);
    const size_t own = size_t(comm->rank) * recv_bytes;
    const bool overlap = r < s + send_bytes && s < r + recv_bytes;
    SCCL_REQUIRE_ARG(!overlap || r == s + own,
                     "recvbuf [%p, +%zu) overlaps sendbuf [%p, +%zu) but is not the in-place "
                     "position sendbuf + %zu (this rank's block): buffers must be disjoint or "
                     "exactly in place",
                     recv, recv_bytes, send, send_bytes, own);
  }
  SCCL_CHECK(placeBuffers(send, send_bytes, recv, recv_bytes, stream, on_device));
  return *on_device ? prepareDeviceCollective(comm, stream) : scclSuccess;
}

}  // namespace sccl
