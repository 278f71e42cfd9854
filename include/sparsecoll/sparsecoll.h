/*
 * sparsecoll: sparse collective communication for gradient exchange.
 *
 * Public C99 ABI. Shaped like NCCL's: opaque handles, one result enum, versioned config structs,
 * and a last-error string per communicator. The header needs neither CUDA nor MPI: streams are
 * `void*` (a cudaStream_t on the CUDA backend, NULL for host memory) and MPI communicators are
 * passed by address.
 *
 * Threading: a communicator is used by one thread at a time (as in NCCL). Different
 * communicators may be used concurrently from different threads.
 */
#ifndef SPARSECOLL_SPARSECOLL_H_
#define SPARSECOLL_SPARSECOLL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SCCL_API __attribute__((visibility("default")))
#else
#define SCCL_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------------- */
#define SCCL_MAJOR 0
#define SCCL_MINOR 1
#define SCCL_PATCH 0
#define SCCL_SUFFIX ""
/* SCCL_VERSION(0,1,0) == 100. Comparable as integers. */
#define SCCL_VERSION(X, Y, Z) ((X)*10000 + (Y)*100 + (Z))
#define SCCL_VERSION_CODE SCCL_VERSION(SCCL_MAJOR, SCCL_MINOR, SCCL_PATCH)

/* ---------------------------------------------------------------------------------------------
 * Results and errors
 * ------------------------------------------------------------------------------------------- */
typedef enum {
  scclSuccess = 0,
  scclUnhandledCudaError = 1, /* a CUDA call failed */
  scclSystemError = 2,        /* an OS call failed, or memory ran out */
  scclInternalError = 3,      /* a bug in sparsecoll */
  scclInvalidArgument = 4,    /* a bad argument; nothing happened, the communicator is usable */
  scclInvalidUsage = 5,       /* a call that cannot be made in this state or build */
  scclRemoteError = 6,        /* a peer failed, disconnected or misbehaved */
  scclInProgress = 7,         /* an operation is still under way */
  scclTimeout = 8,            /* a wait passed its deadline */
  scclNumResults = 9
} scclResult_t;

/* A static string naming the result ("invalid argument"). Never NULL. */
SCCL_API const char* scclGetErrorString(scclResult_t result);

typedef struct scclComm* scclComm_t;
#define SCCL_COMM_NULL NULL

/* The message of the last failed call: on `comm` if comm is a live communicator, otherwise the
 * last failure of this thread (for calls without a communicator, such as scclPartitionedSelect).
 * Returns "" when there was none. The string stays valid until the next call on the same
 * communicator or thread. */
SCCL_API const char* scclGetLastError(scclComm_t comm);

/* Writes SCCL_VERSION_CODE of the library (not of this header) to *version. */
SCCL_API scclResult_t scclGetVersion(int* version);

/* ---------------------------------------------------------------------------------------------
 * Types
 * ------------------------------------------------------------------------------------------- */
/* Numbered as NCCL's ncclDataType_t so that values convert one to one. */
typedef enum {
  scclInt8 = 0,
  scclUint8 = 1,
  scclInt32 = 2,
  scclUint32 = 3,
  scclInt64 = 4,
  scclUint64 = 5,
  scclFloat16 = 6,
  scclFloat32 = 7,
  scclFloat64 = 8,
  scclBfloat16 = 9,
  scclNumTypes = 10
} scclDataType_t;

typedef enum {
  scclSum = 0, /* element-wise sum over ranks */
  scclAvg = 1, /* element-wise sum divided by the number of ranks */
  scclNumOps = 2
} scclRedOp_t;

/* ---------------------------------------------------------------------------------------------
 * Communicators
 * ------------------------------------------------------------------------------------------- */
#define SCCL_UNIQUE_ID_BYTES 128
/* Made by scclGetUniqueId on one rank and handed to all others out of band. It holds the
 * rendezvous address and port of that process and a random per-job token; one id serves one
 * communicator. */
typedef struct {
  char internal[SCCL_UNIQUE_ID_BYTES];
} scclUniqueId;

#define SCCL_CONFIG_UNDEF_INT INT_MIN
#define SCCL_CONFIG_UNDEF_PTR NULL
#define SCCL_CONFIG_MAGIC 0x5cc1c0f9u

/* Communicator configuration. Append-only: new fields go at the end, `size` and `version` tell
 * the library which fields the caller knows. Always start from SCCL_CONFIG_INITIALIZER; unset
 * fields take their environment variable or default. */
typedef struct {
  size_t size;           /* sizeof(scclConfig_t) as the caller compiled it */
  unsigned int magic;    /* SCCL_CONFIG_MAGIC */
  unsigned int version;  /* SCCL_VERSION_CODE of the caller's header */
  const char* transport; /* "local" (ranks are threads of one process), "mpi"; NULL: SCCL_TRANSPORT,
                            else "mpi" for scclCommInitMpi and "local" otherwise */
  int timeoutMs;         /* deadline of every wait; UNDEF: SCCL_TIMEOUT_MS (default 30000) */
  const char* commName;  /* shown in logs; NULL: none */
} scclConfig_t;

#define SCCL_CONFIG_INITIALIZER                                                        \
  {                                                                                    \
    sizeof(scclConfig_t), SCCL_CONFIG_MAGIC, SCCL_VERSION_CODE, SCCL_CONFIG_UNDEF_PTR, \
        SCCL_CONFIG_UNDEF_INT, SCCL_CONFIG_UNDEF_PTR                                   \
  }

/* Creates a unique id and starts the rendezvous service in this process. Call once per
 * communicator, on one rank (conventionally rank 0), which must then also join with
 * scclCommInitRank. The service listens on loopback, or on the interface named by
 * SCCL_SOCKET_IFNAME. */
SCCL_API scclResult_t scclGetUniqueId(scclUniqueId* uniqueId);

/* Collective over the nranks callers (threads or processes) that pass the same id. Blocks until
 * all have joined or the timeout passes. On failure *comm is left untouched. */
SCCL_API scclResult_t scclCommInitRank(scclComm_t* comm, int nranks, scclUniqueId commId, int rank);
SCCL_API scclResult_t scclCommInitRankConfig(scclComm_t* comm, int nranks, scclUniqueId commId,
                                             int rank, const scclConfig_t* config);

/* Convenience for jobs launched by mpirun: a communicator over the MPI communicator *mpiComm (a
 * pointer to an MPI_Comm; NULL means MPI_COMM_WORLD), with the same ranks. Collective over that
 * MPI communicator; MPI must be initialised by the caller. config may be NULL. The transport
 * defaults to "mpi". Returns scclInvalidUsage if the library was built without MPI. */
SCCL_API scclResult_t scclCommInitMpi(scclComm_t* comm, const void* mpiComm,
                                      const scclConfig_t* config);

/* Frees the communicator. Not collective; in-flight operations must have completed. */
SCCL_API scclResult_t scclCommDestroy(scclComm_t comm);
/* Marks the communicator failed (peers blocked in a collective with it get scclRemoteError where
 * the transport can tell them) and frees it. Always returns. */
SCCL_API scclResult_t scclCommAbort(scclComm_t comm);
/* *asyncError = scclSuccess while the communicator is healthy, else the error that broke it. */
SCCL_API scclResult_t scclCommGetAsyncError(scclComm_t comm, scclResult_t* asyncError);
SCCL_API scclResult_t scclCommCount(const scclComm_t comm, int* count);
SCCL_API scclResult_t scclCommUserRank(const scclComm_t comm, int* rank);
/* The transport the communicator runs on ("local", "mpi"); static string. */
SCCL_API scclResult_t scclCommTransportName(const scclComm_t comm, const char** name);

/* ---------------------------------------------------------------------------------------------
 * Dense collectives (the transport's, exposed for baselines and frameworks)
 * ------------------------------------------------------------------------------------------- */
/* recvbuf = sum (or average) over ranks of sendbuf, `count` elements; sendbuf == recvbuf allowed.
 * Every rank gets bitwise the same result: element-wise ((x_0 + x_1) + x_2) + ... in rank order;
 * float16 and bfloat16 are summed in float32 and rounded once. Host memory; stream must be NULL
 * in a build without CUDA. */
SCCL_API scclResult_t scclAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                                    scclDataType_t datatype, scclRedOp_t op, scclComm_t comm,
                                    void* stream);
/* recvbuf[r * sendcount + i] = sendbuf of rank r [i]. */
SCCL_API scclResult_t scclAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                    scclDataType_t datatype, scclComm_t comm, void* stream);
SCCL_API scclResult_t scclBroadcast(const void* sendbuf, void* recvbuf, size_t count,
                                    scclDataType_t datatype, int root, scclComm_t comm,
                                    void* stream);
SCCL_API scclResult_t scclBarrier(scclComm_t comm);

/* ---------------------------------------------------------------------------------------------
 * Selection primitive
 * ------------------------------------------------------------------------------------------- */
/* Selects the elements x = buf[i], begin <= i < end, with |x| >= threshold, in ascending index
 * order: idxOut[j] gets the index i (relative to buf, not to begin) and valOut[j] the value x in
 * the buffer's dtype. NaN counts as above every threshold, so NaN gradients are sent and seen.
 *
 * Capacity: at most `capacity` entries are written. *nselected always receives the number of
 * elements that qualify, which may exceed capacity; then the entries written are the first
 * `capacity` in index order and the call still returns scclSuccess. A caller detects overflow by
 * *nselected > capacity and retries with capacity >= *nselected (the count is exact, so one retry
 * suffices).
 *
 * dtype: scclFloat32, scclFloat64, scclFloat16 or scclBfloat16. threshold must be >= 0 and not
 * NaN; it is compared exactly (as a real number) with |x|. valOut may be NULL (indices only).
 * Host buffers with stream NULL run on the CPU backend. Errors: scclInvalidArgument for null
 * buffers, begin > end, end > count, capacity 0, an unsupported dtype, a negative or NaN
 * threshold, or count * element size overflowing size_t. */
SCCL_API scclResult_t scclPartitionedSelect(const void* buf, size_t count, scclDataType_t dtype,
                                            size_t begin, size_t end, double threshold,
                                            int64_t* idxOut, void* valOut, size_t capacity,
                                            size_t* nselected, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSECOLL_SPARSECOLL_H_ */
