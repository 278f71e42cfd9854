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

/* In C++ the enums below have int as their fixed underlying type, as they have in C in practice:
 * every int is then a value of the type, so a caller's out-of-range value (which the library
 * rejects with scclInvalidArgument) is not undefined behaviour in C++ code that reads it. */
#ifdef __cplusplus
#define SCCL_ENUM_BASE : int
#else
#define SCCL_ENUM_BASE
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
typedef enum SCCL_ENUM_BASE {
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
typedef enum SCCL_ENUM_BASE {
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

typedef enum SCCL_ENUM_BASE {
  scclSum = 0, /* element-wise sum over ranks */
  scclAvg = 1, /* element-wise sum divided by the number of ranks */
  scclMax = 2, /* element-wise maximum (dense collectives only; NaN if any operand is NaN) */
  scclMin = 3, /* element-wise minimum (dense collectives only; NaN if any operand is NaN) */
  scclNumOps = 4
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
  const char* transport; /* "local" (ranks are threads of one process), "mpi", "ucx", "nccl" (as
                            built; docs/transports.md); NULL: SCCL_TRANSPORT, else "mpi" for
                            scclCommInitMpi and "local" otherwise */
  int timeoutMs;         /* deadline of every wait, > 0; UNDEF: SCCL_TIMEOUT_MS (default 30000,
                            at most INT_MAX) */
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
 * SCCL_SOCKET_IFNAME. All services of a process share one thread; an id never used holds its
 * listening socket until SCCL_BOOTSTRAP_TIMEOUT_MS (1 .. INT_MAX ms, default 120000) passes. */
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
/* *asyncError = scclSuccess while the communicator is healthy, else the error that broke it.
 * Never blocks; a peer's abort or timeout is reported here before this rank's next call where
 * the transport can tell without waiting (local: scclRemoteError; docs/reliability.md). */
SCCL_API scclResult_t scclCommGetAsyncError(scclComm_t comm, scclResult_t* asyncError);
SCCL_API scclResult_t scclCommCount(const scclComm_t comm, int* count);
SCCL_API scclResult_t scclCommUserRank(const scclComm_t comm, int* rank);
/* The transport the communicator runs on ("local", "mpi", "ucx", "nccl"); static string. */
SCCL_API scclResult_t scclCommTransportName(const scclComm_t comm, const char** name);

/* Splits comm, as ncclCommSplit. Collective over comm: every rank calls it, and it is agreed like
 * the collectives below (a rank in another call makes every rank return scclInvalidUsage). Ranks
 * that pass the same color form a new communicator, ranked by (key, rank in comm); a rank passing
 * SCCL_SPLIT_NOCOLOR takes no part and gets *newcomm = NULL. The child's settings are config's
 * where it sets them, else the parent's (timeout, name, transport), whatever the environment says;
 * the transport is "local" instead when the child's ranks are threads of one process. A color
 * that is negative and not SCCL_SPLIT_NOCOLOR, a NULL newcomm or a config scclCommInitRankConfig
 * would refuse fails on every rank: that rank's own error (scclInvalidArgument for a bad argument)
 * there, scclInvalidUsage naming it on the others; nothing is created and comm stays usable. The
 * child has its own rendezvous and transport: it stays usable after comm is destroyed, and either
 * may be destroyed or aborted first. */
#define SCCL_SPLIT_NOCOLOR (-1)
SCCL_API scclResult_t scclCommSplit(scclComm_t comm, int color, int key, scclComm_t* newcomm,
                                    scclConfig_t* config);

/* ---------------------------------------------------------------------------------------------
 * Dense collectives (the transport's, exposed for baselines and frameworks)
 * ------------------------------------------------------------------------------------------- */
/* Common to all: no buffer above 2^56 bytes, and sendbuf and recvbuf either disjoint or exactly
 * in place (all-reduce, broadcast: sendbuf == recvbuf; all-gather: sendbuf == recvbuf + rank *
 * sendcount); else scclInvalidArgument on that rank, nothing touched.
 * Call agreement (every collective of this header, sparse and EventGraD ones included): before
 * any data moves the ranks compare what they called (operation, count, dtype, reduction, root,
 * sparsifier or event communicator, call number). Ranks that called different things all return
 * scclInvalidUsage with the same message naming the field, values and ranks; nothing was
 * exchanged and the communicator stays usable (docs/api.md, "Call agreement"). */
/* recvbuf = sum, average, maximum or minimum over ranks of sendbuf, `count` elements; sendbuf ==
 * recvbuf allowed. Every rank gets bitwise the same result: element-wise ((x_0 + x_1) + x_2) + ...
 * in rank order; float16 and bfloat16 are combined in float32 and rounded once; scclAvg takes
 * floating types only; a floating result that is NaN is the canonical quiet NaN. Buffers of a call
 * are all host memory (stream NULL) or all GPU memory (stream: the caller's cudaStream_t,
 * synchronised before the transport runs) on a transport that carries device memory (nccl; else
 * scclInvalidUsage). */
SCCL_API scclResult_t scclAllReduce(const void* sendbuf, void* recvbuf, size_t count,
                                    scclDataType_t datatype, scclRedOp_t op, scclComm_t comm,
                                    void* stream);
/* recvbuf[r * sendcount + i] = sendbuf of rank r [i]. */
SCCL_API scclResult_t scclAllGather(const void* sendbuf, void* recvbuf, size_t sendcount,
                                    scclDataType_t datatype, scclComm_t comm, void* stream);
/* recvbuf[i] = reduction (op) over ranks r of sendbuf of rank r [rank * recvcount + i]: sendbuf
 * holds nranks blocks of recvcount elements and each rank receives the reduction of its block,
 * bitwise that slice of scclAllReduce's result (rank order, the same rounding and NaN rule).
 * In place: recvbuf == sendbuf + rank * recvcount elements. */
SCCL_API scclResult_t scclReduceScatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                        scclDataType_t datatype, scclRedOp_t op, scclComm_t comm,
                                        void* stream);
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
 * buffers (buf may be NULL when begin == end), begin > end, end > count, capacity 0, an
 * unsupported dtype, a negative or NaN threshold, or count * element size above 2^56 bytes. */
SCCL_API scclResult_t scclPartitionedSelect(const void* buf, size_t count, scclDataType_t dtype,
                                            size_t begin, size_t end, double threshold,
                                            int64_t* idxOut, void* valOut, size_t capacity,
                                            size_t* nselected, void* stream);

/* ---------------------------------------------------------------------------------------------
 * Sparse all-reduce
 * ------------------------------------------------------------------------------------------- */
typedef struct scclSparsifier* scclSparsifier_t;

/* What happens when the accumulated gradient (residual + gradient) holds NaN or +-Inf on any
 * rank. Every rank learns it in the same call and acts the same. */
typedef enum SCCL_ENUM_BASE {
  /* recvbuf is filled with NaN on every rank (so an AMP grad scaler skips the step) and every
   * residual is left as it was before the call: the step's gradient is discarded. */
  scclNonFinitePropagate = 0,
  /* The call returns scclInvalidArgument on every rank naming the first rank with non-finite
   * values; recvbuf and the sparsifier are left untouched. */
  scclNonFiniteError = 1
} scclNonFinitePolicy_t;

#define SCCL_SPARSE_CONFIG_MAGIC 0x5cc15a45u

/* A sparsifier is a preset (`algorithm`) over three axes: how the threshold is estimated, where
 * each rank selects (search space), and how the selection travels (reduction). NULL axis names
 * take the preset's. Start from SCCL_SPARSE_CONFIG_INITIALIZER, which holds the reference
 * defaults; append-only like scclConfig_t. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  const char* algorithm;   /* dense, topk, cltk, hard_threshold, micro, exdyna (default),
                              sidco, s2, micro_sync_free, exdyna_sync_free, or "auto": the
                              library's cost model picks a preset at creation and may
                              change it after measured calls (docs/cost_model.md;
                              scclSparsifierGetAlgorithm names it); with streamOrdered a
                              sync-free one, and the first call on device buffers moves it
                              to a preset with a device path (dense has none) */
  const char* estimator;   /* NULL, or topk, fixed, scaling, sidco_exp, sidco_gp, sidco_gamma_gp,
                              dgc, redsync, gaussiank */
  const char* searchSpace; /* NULL, or whole, leader, micro, exdyna */
  const char* reduction;   /* NULL, or dense, gather, sketch */
  double density;          /* target fraction k/count in (0, 1]; default 0.01 */
  int errorFeedback;       /* 1 (default): unsent values stay in the residual; 0: dropped */
  scclNonFinitePolicy_t nonFinite; /* default scclNonFinitePropagate */
  double maxDensitySlack;  /* < 0 (default): off; >= 0: each rank sends at most
                              ceil(k/n * (1 + slack)) entries, the largest */
  double threshold;        /* fixed (hard_threshold) or initial (scaling) threshold; < 0 (default):
                              1/(2 sqrt(k)) as the reference code */
  double scalingBand;      /* beta of the threshold scaling, default 1.1 */
  double scalingStep;      /* gamma of the threshold scaling, default 0.005 */
  int numBlocks;           /* ExDyna blocks, default 1024 */
  int blockAlign;          /* ExDyna block size is a multiple of this, default 32 */
  double rebalanceAlpha;   /* ExDyna imbalance trigger, default 1.05 */
  int rebalanceMoveBlocks; /* ExDyna blocks moved per step, default 1 */
  double minBlocksFactor;  /* ExDyna minimum blocks per partition = numBlocks*factor/n, 0.25 */
  const char* scalingRule; /* threshold scaling outside the target: "proportional" (default: a
                              step sized by the density error) or "band" (the papers' fixed
                              steps of scalingStep); see docs/algorithms/micro.md */
  const char* densityCorrection; /* NULL (the preset's: "histogram" for micro and exdyna, else
                              "none"), "none", or "histogram": before selecting, the ranks count
                              |acc| in log-spaced bins around the scaled threshold, all-reduce the
                              counts and select at the bin edge whose global count is nearest k
                              (needs an exclusive search space and the scaling estimator); see
                              docs/algorithms/density_correction.md */
  int correctionBinsPerOctave; /* bins per factor of 2, a power of 2 in [1, 4096]; default 256 */
  int correctionOctaves;   /* the bins span threshold * 2^[-octaves, +octaves), 1..16; default 1 */
  /* SIDCo estimators (sidco_exp, sidco_gp, sidco_gamma_gp; docs/algorithms/sidco.md) */
  double sidcoFirstRatio;     /* first-stage ratio delta_1 in (0, 1), default 0.25 */
  int sidcoStages;            /* 0 (default): adaptive stage count starting at 1; M >= 1: fixed */
  int sidcoMaxStages;         /* upper bound of the adaptive M; 0 (default): ceil(log2(1/density)) */
  int sidcoAdaptInterval;     /* Q: calls between stage adaptations, default 5 */
  double sidcoAdaptTolerance; /* eps: M changes when the mean k'/k leaves [1-eps, 1+eps], 0.2 */
  double sidcoFeedback;       /* gain in [0, 1] of the threshold correction by the achieved k'/k;
                                 default 0.25; with it, a count check of one histogram pass moves
                                 the fitted threshold to the bin edge nearest k; 0: both off,
                                 the paper's estimator */
  /* DGC estimator (docs/algorithms/dgc.md) */
  double dgcSampleRatio;      /* sampled fraction in (0, 1], default 0.01 */
  int dgcSeed;                /* >= 0, seed of the deterministic sampling, default 0 */
  /* S2 Reducer: reduction "sketch", preset s2 (docs/algorithms/s2.md). The gradient is cut into
   * blocks; a bitmap marks the selected blocks, a count sketch of rows x width buckets carries
   * their values, both are all-reduced and every rank decodes the marked blocks. */
  /* Elements per block, >= 1; default 32 (embedding gradients: the embedding width, so that a
   * block is a row). */
  int sketchBlockSize;
  /* "topk" (default): the ceil(k / sketchBlockSize) blocks of largest L2 norm; "nonzero": every
   * block holding a non-zero value (already sparse gradients such as embedding rows). */
  const char* sketchBlockSelection;
  /* r, the sketch rows (independent hash functions), 1..16; default 3. */
  int sketchRows;
  /* lambda: buckets per row relative to the non-zeros sent: width = ceil(lambda * k) with "topk"
   * selection (k = max(1, floor(density * count))), ceil(lambda * max over ranks of the elements
   * in their marked blocks) per call with "nonzero"; in (0, 64], default 0.5 (the paper's best). */
  double sketchLambda;
  /* >= 0, seed of the hash and sign functions; default 0. */
  int sketchSeed;
  /* Error feedback of the sketch reduction (with errorFeedback 1): "unselected" (default): the
   * residual keeps the blocks this rank did not select, its selected blocks restart from 0;
   * "decode_error": in every block marked by any rank the residual becomes acc - decoded sum /
   * nranks, which feeds the decode error back and conserves the sum over ranks. */
  const char* sketchFeedback;
  /* The sync_free reduction (presets micro_sync_free, exdyna_sync_free, with the scaling or
   * fixed estimator) on device buffers never reads anything back: the threshold, the call number
   * and the partitions live on the device, and checks that fail while the call runs (a peer at
   * another call, a bad peer slot, non-finite values under scclNonFiniteError) fill recvbuf with
   * NaN, change nothing else and set the sparsifier's sticky asynchronous error
   * (scclSparsifierGetAsyncError); its statistics are read from the device when asked.
   * 1: every step is also enqueued on `stream` with fixed buffers, so the call can be captured in
   * a CUDA graph (docs/gpu.md); needs a transport that orders collectives on a stream (nccl).
   * The first device call allocates and must not be captured; a captured graph replays the
   * density of its capture (recapture after scclSparsifierSetDensity or a warm-up step).
   * 0 (default): residual and
   * accumulator trade roles after each call (no copy of the vector); over local, mpi and ucx each
   * of the two collectives waits for the stream once. Host buffers ignore it. */
  int streamOrdered;
  /* Density warm-up (DGC's; docs/tuning.md): the first densityWarmupCalls calls use a density
   * that moves from densityWarmupStart to `density`. With t the sparsifier's agreed call number
   * (calls completed since creation or scclSparsifierReset, the same on every rank), s the start,
   * d the target and N the calls: "exponential" (default): s * (d / s)^(t / N); "linear":
   * s + (d - s) * t / N; d from call N on. 0 calls (default): no warm-up. The start is in (0, 1]
   * (may be above or below d); k of each call is max(1, floor(density * count)). Not with the
   * sketch reduction (s2 sizes its sketch from the density at creation); the sync_free reduction
   * sizes its capacity for max(density, densityWarmupStart). */
  double densityWarmupStart; /* default 0 (no warm-up) */
  int densityWarmupCalls;    /* N >= 0, default 0 */
  const char* densityWarmupForm; /* "exponential" (default) or "linear" */
  /* NULL or "flat" (default): every rank selects over the whole vector and sends across the
   * network; "node": ranks that share a node (scclCommSplit by node, comm's node detection) first
   * reduce-scatter the gradient inside the node, the preset then runs across nodes among the
   * ranks with the same local index, each over its 1/L chunk with its own residual, and an
   * all-gather inside the node completes the vector (docs/algorithms/hierarchy.md). Every node
   * must hold the same number of ranks. Host or device buffers (device: presets with a device
   * path; not streamOrdered). With algorithm "auto": NULL lets auto price both forms where nodes
   * hold several ranks; "flat" or "node" restricts it to that form. */
  const char* hierarchy;
} scclSparseConfig_t;

#define SCCL_SPARSE_CONFIG_INITIALIZER                                                           \
  {                                                                                              \
    sizeof(scclSparseConfig_t), SCCL_SPARSE_CONFIG_MAGIC, SCCL_VERSION_CODE, "exdyna", NULL,     \
        NULL, NULL, 0.01, 1, scclNonFinitePropagate, -1.0, -1.0, 1.1, 0.005, 1024, 32, 1.05, 1,  \
        0.25, "proportional", NULL, 256, 1, 0.25, 0, 0, 5, 0.2, 0.25, 0.01, 0, 32, "topk", 3, 0.5, \
        0, "unselected", 0, 0.0, 0, "exponential", NULL                                          \
  }

/* Applies the keys of a JSON object to *config (start from SCCL_SPARSE_CONFIG_INITIALIZER):
 * "algorithm", "estimator", "search", "reduction", "density", "error_feedback",
 * "non_finite" ("propagate" | "error"), "max_density_slack", "threshold", "scaling_band",
 * "scaling_step", "scaling_rule", "num_blocks", "block_align", "rebalance_alpha",
 * "rebalance_move_blocks", "min_blocks_factor", "density_correction" ("none" | "histogram"),
 * "correction_bins_per_octave", "correction_octaves", "sidco_first_ratio", "sidco_stages",
 * "sidco_max_stages", "sidco_adapt_interval", "sidco_adapt_tolerance", "sidco_feedback",
 * "dgc_sample_ratio", "dgc_seed", "sketch_block_size", "sketch_block_selection" ("topk" |
 * "nonzero"), "sketch_rows", "sketch_lambda", "sketch_seed", "sketch_feedback" ("unselected" |
 * "decode_error"), "stream_ordered" (true | false), "hierarchy" ("flat" | "node"), "density_warmup" (an object with "start",
 * "calls" and optionally "form": "exponential" | "linear"; e.g. {"start": 0.25, "calls": 100}).
 * Booleans take true, false, 1 or 0. An
 * unknown key, a wrong type or an out-of-range value is scclInvalidArgument naming the key, and
 * leaves *config untouched. String fields point to static storage of the library. */
SCCL_API scclResult_t scclSparseConfigFromJson(const char* json, scclSparseConfig_t* config);

/* Per-buffer state of the sparse all-reduce: error-feedback residual, threshold, partitions,
 * iteration and statistics. Collective over comm: every rank must pass the same count, dtype and
 * config (checked; a mismatch is scclInvalidUsage on every rank, naming the field and ranks).
 * dtype: float32, float16 or bfloat16 (residual kept in float32) or float64. */
SCCL_API scclResult_t scclSparsifierCreate(scclSparsifier_t* sparsifier, scclComm_t comm,
                                           size_t count, scclDataType_t dtype,
                                           const scclSparseConfig_t* config);
SCCL_API scclResult_t scclSparsifierDestroy(scclSparsifier_t sparsifier);
/* Clears the residual and returns threshold, partitions, iteration and statistics to their
 * initial state. Local (every rank should reset at the same call to stay in step). */
SCCL_API scclResult_t scclSparsifierReset(scclSparsifier_t sparsifier);

/* Drop-in for an all-reduce of a gradient: recvbuf receives the aggregated sparse gradient in
 * dense layout (zeros where nothing was selected), sum or average over ranks, bitwise identical
 * on every rank (op: scclSum or scclAvg; scclMax and scclMin: scclInvalidArgument). sendbuf ==
 * recvbuf allowed. count and dtype must be the sparsifier's, comm the one it was created on. Unsent values stay in the residual (error feedback). Buffers: host
 * memory with stream NULL, or both GPU memory with the caller's cudaStream_t, for the gather, sketch
 * and sync_free reductions over the nccl transport (others: scclInvalidUsage; docs/gpu.md). */
SCCL_API scclResult_t scclSparseAllreduce(const void* sendbuf, void* recvbuf, size_t count,
                                          scclDataType_t dtype, scclRedOp_t op,
                                          scclSparsifier_t sparsifier, scclComm_t comm,
                                          void* stream);

/* Statistics of the last call and cumulative ones. Set `size` to sizeof(scclSparseStats_t). */
typedef struct {
  size_t size;
  uint64_t iteration;        /* calls completed */
  /* last call */
  uint64_t kTarget;          /* k = max(1, floor(density * count)) */
  uint64_t kLocal;           /* k_i: entries this rank selected */
  uint64_t kGlobal;          /* k': distinct entries aggregated */
  uint64_t kMax;             /* max over ranks of k_i */
  double density;            /* k' / count */
  double densityError;       /* k'/k - 1 */
  double gatherInflation;    /* f(t) = n * max(k_i) / k' (1 = no padding waste); 0 if k' = 0 */
  uint64_t bytesSent;        /* by this rank, all collectives of the call */
  uint64_t bytesReceived;
  double threshold;          /* threshold used in the call */
  double residualNorm;       /* L2 norm of this rank's residual after the call */
  uint64_t nonFinite;        /* non-finite accumulated values on this rank */
  double timeSelectUs;       /* accumulate + estimate + select */
  double timeCommUs;         /* collectives */
  double timeOtherUs;        /* gather, scatter, residual update, bookkeeping */
  /* since creation or reset */
  uint64_t totalBytesSent;
  uint64_t totalBytesReceived;
  double totalTimeSelectUs;
  double totalTimeCommUs;
  double totalTimeOtherUs;
  double meanAbsDensityError; /* mean over calls of |k'/k - 1| */
  /* "algorithm": "auto" only (0 otherwise): the cost model's time of one call of the chosen
   * preset, predicted at creation (docs/cost_model.md); the measured time of a call is
   * timeSelectUs + timeCommUs + timeOtherUs. Not reset by scclSparsifierReset. After auto
   * switched presets (autoSwitches > 0), the model's time of the preset running now. */
  double predictedTimeUs;
  /* "auto" re-deciding from measured calls (SCCL_AUTO_RETUNE, docs/cost_model.md): how many times
   * it changed the preset, and 1 while it runs the preset it settled on (0 while it measures a
   * choice; it checks again at calls 100, 1000, ... and measures anew only where the time moved by
   * more than the tolerance). Always 1 for a named preset, with SCCL_AUTO_RETUNE=0 and on device
   * buffers. Not reset by scclSparsifierReset. */
  uint64_t autoSwitches;
  uint64_t autoSettled;
  /* "hierarchy": "node" (0 otherwise): the bytes this rank sent and received inside its node (the
   * reduce-scatter and the all-gather), last call and since creation or reset; bytesSent and
   * bytesReceived then count what crossed the node boundary, and kTarget, kGlobal and density
   * cover the node's chunks together. */
  uint64_t bytesSentInsideNode;
  uint64_t bytesReceivedInsideNode;
  uint64_t totalBytesSentInsideNode;
  uint64_t totalBytesReceivedInsideNode;
} scclSparseStats_t;

SCCL_API scclResult_t scclSparsifierGetStats(scclSparsifier_t sparsifier,
                                             scclSparseStats_t* stats);
/* *asyncError = the first error that a sync_free call on device buffers (micro_sync_free,
 * exdyna_sync_free; scclSparseConfig_t.streamOrdered) found while it ran on the GPU, or
 * scclSuccess: scclInvalidUsage (a peer at another call or
 * config), scclRemoteError (a peer's slot claims too many entries or holds a bad index),
 * scclInvalidArgument (non-finite values under scclNonFiniteError); scclGetLastError then names
 * the rank and the call. Never waits for the GPU: it sees the calls that have run so far
 * (synchronise the stream to include the last one). Sticky until scclSparsifierReset; every call
 * after it fills recvbuf with NaN and changes nothing. Also, for micro and exdyna on device
 * buffers (whose index check runs on the GPU after the call's one read-back): scclRemoteError
 * once a peer's index failed its check; that call left recvbuf untouched and kept the residual,
 * and every later call returns scclRemoteError. scclSuccess for other sparsifiers. */
SCCL_API scclResult_t scclSparsifierGetAsyncError(scclSparsifier_t sparsifier,
                                                  scclResult_t* asyncError);
/* *name = the preset the sparsifier runs now: its config's algorithm, or for "auto" the one chosen
 * at creation or, after measured calls proved the cost model wrong, the one auto switched to
 * (SCCL_AUTO_RETUNE; the same on every rank after the same calls). A static string. */
SCCL_API scclResult_t scclSparsifierGetAlgorithm(scclSparsifier_t sparsifier, const char** name);
/* counts[r] = k_r of the last call for every rank r (nranks entries). */
SCCL_API scclResult_t scclSparsifierGetRankCounts(scclSparsifier_t sparsifier, uint64_t* counts,
                                                  int nranks);
/* Zeroes, in `buffer` (count host elements of dtype, count = the sparsifier's), every element
 * the last call's output carries: the global index list of the gather and sync_free presets, the
 * blocks some rank marked for s2, every element for the dense reduction (also after "auto"
 * switched presets following that call). Nothing when no call has completed since creation,
 * scclSparsifierReset or a checkpoint load, or when the last call failed or discarded its step
 * (non-finite gradients). What DGC's momentum factor
 * masking needs for a velocity kept beside the sparsifier (the Python hook's momentum
 * correction), at the cost of k' writes instead of a pass over the vector. Local (no
 * communication). dtype float32, float16, bfloat16 or float64, else scclInvalidArgument.
 * scclInvalidUsage for a sparsifier whose calls run on device buffers (mask the velocity with
 * the output on the device) and for "hierarchy": "node" (each rank knows only its own chunk's
 * list). */
SCCL_API scclResult_t scclSparsifierMaskSent(scclSparsifier_t sparsifier, void* buffer,
                                             size_t count, scclDataType_t dtype);
/* Sets the target density from the next call on (k = max(1, floor(density * count)); the
 * estimators' density-dependent parameters and scclSparseStats_t.kTarget follow) and ends any
 * density warm-up of the config. Local, but the density in effect is part of what every call
 * checks: every rank must set the same density before the same call, or that call returns
 * scclInvalidUsage on every rank (nothing is exchanged and everything stays usable; setting an
 * agreed density again resumes). density in (0, 1], else scclInvalidArgument and nothing
 * changes. Per preset (docs/api.md): s2 (sketch reduction) refuses any change
 * (scclInvalidArgument: its sketch is sized at creation); the sync_free presets refuse a density
 * above the one their capacity was sized for at creation (max(density, densityWarmupStart)). */
SCCL_API scclResult_t scclSparsifierSetDensity(scclSparsifier_t sparsifier, double density);

/* Checkpoints: everything a sparsifier carries between calls (the error-feedback residual, the
 * threshold and every estimator's state, the partitions, the call number, the density in effect
 * and its warm-up position, the last call's rank counts, the statistics), so that a job restarted
 * from its checkpoint continues bit for bit instead of dropping up to 1/density steps of unsent
 * gradient. One blob per rank (residuals differ), host memory, versioned, with a CRC-32 and the
 * configuration fingerprint, rank and rank count it was written for (docs/api.md, "Checkpoints").
 *
 * scclSparsifierGetStateSize: *bytes = the size ExportState needs now. Local.
 * scclSparsifierExportState: writes the blob into buffer[0, bytes) (scclInvalidArgument if bytes
 * is smaller than the size), *written (may be NULL) = its size. Local; on device buffers it waits
 * for the GPU and copies the residual to the host (the sync_free presets on device buffers:
 * scclInvalidUsage, their state lives in device words).
 * scclSparsifierImportState: loads a blob into a sparsifier created with the same count, dtype and
 * config (scclSparsifierSetDensity before or after the save is fine) on a communicator of the same
 * size, on the rank that wrote it. Collective: every rank calls it at the same point. A blob that
 * is truncated, corrupted, of another format version, configuration, count, dtype, rank or rank
 * count, or holds a value out of its range: scclInvalidArgument on that rank, scclInvalidUsage on
 * the others. Ranks whose blobs disagree on what every rank shares (call number, density,
 * threshold, partitions; blobs of different saves): scclInvalidUsage on every rank. On any error
 * the sparsifier is exactly as before and the communicator stays usable. The loaded residual is
 * in host memory; a sparsifier on device buffers uploads it at its next call (recapture a CUDA
 * graph after loading). A "hierarchy": "node" sparsifier resumes on the same node layout; its
 * import agrees across nodes and then over the whole communicator before any rank changes. */
SCCL_API scclResult_t scclSparsifierGetStateSize(scclSparsifier_t sparsifier, size_t* bytes);
SCCL_API scclResult_t scclSparsifierExportState(scclSparsifier_t sparsifier, void* buffer,
                                                size_t bytes, size_t* written);
SCCL_API scclResult_t scclSparsifierImportState(scclSparsifier_t sparsifier, const void* buffer,
                                                size_t bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The ABI's other parts, one header each (each includes this one). */
#include "count_sketch.h"
#include "event.h"

#endif /* SPARSECOLL_SPARSECOLL_H_ */
