/*
 * sparsecoll: event-triggered decentralised averaging (EventGraD), part of the public C99 ABI.
 * Included by sparsecoll.h; docs/algorithms/eventgrad.md describes the algorithm.
 */
#ifndef SPARSECOLL_EVENT_H_
#define SPARSECOLL_EVENT_H_

/* The shared types (scclResult_t, scclComm_t, scclDataType_t, SCCL_API) are in sparsecoll.h,
 * which also includes this header: either include order works. */
#include "sparsecoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Event-triggered decentralised averaging (EventGraD)
 * ------------------------------------------------------------------------------------------- */
/* Each rank averages its parameters with those of its neighbours (decentralised SGD, D-PSGD), but
 * sends a parameter tensor to the neighbours only when the tensor's norm has changed by more than
 * a threshold since it was last sent; receivers average with the last copy they got. Copies
 * travel by one-sided puts into the neighbours' windows. See docs/algorithms/eventgrad.md. */
typedef struct scclEventComm* scclEventComm_t;

typedef enum SCCL_ENUM_BASE {
  /* threshold = horizon x mean slope of the last `history` events (|norm change| / passes),
   * fixed until the next event (the paper's rule) */
  scclEventThresholdAdaptive = 0,
  /* threshold = staticThreshold on every pass */
  scclEventThresholdStatic = 1
} scclEventThresholdMode_t;

typedef enum SCCL_ENUM_BASE {
  /* x = w_self x + sum_j w_j y_j with y_j the last copy received from neighbour j (the paper) */
  scclEventAverageCopies = 0,
  /* x = x + sum_j w_j (y_j - s) with s this rank's own last sent copy: the same average when every
   * copy is fresh, but stale copies no longer pull the network's mean model back (with symmetric
   * weights the sum of the models over the ranks is unchanged by averaging). Not in the paper: see
   * docs/algorithms/eventgrad.md */
  scclEventAverageDifferences = 1
} scclEventAveraging_t;

#define SCCL_EVENT_CONFIG_MAGIC 0x5cc1e7e7u

/* Start from SCCL_EVENT_CONFIG_INITIALIZER (the paper's settings); append-only. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  scclEventThresholdMode_t thresholdMode; /* default adaptive */
  double horizon;         /* adaptive: threshold = horizon x slope; default 1; >= 0 (0: every
                             pass sends, i.e. D-PSGD) */
  double staticThreshold; /* static: the threshold on |norm change|; default 0; >= 0 */
  int history;            /* slopes averaged by the adaptive rule; default 2; >= 1 */
  int initialPasses;      /* the first passes always send; default 30; >= 0 */
  int synchronous;        /* 1 (default): each pass ends with a barrier, so every copy sent in
                             pass k is used in pass k on every rank: bitwise reproducible. 0: no
                             barrier; receivers use whatever copy has arrived (the reference
                             code's behaviour; results depend on timing) */
  int maxSilentPasses;    /* > 0: a tensor not sent for this many passes is sent anyway (an
                             event), which bounds the staleness of every copy; 0 (default): off,
                             the paper's rule. Not in the paper: see docs/algorithms/eventgrad.md */
  scclEventAveraging_t averaging; /* default scclEventAverageCopies (the paper's) */
} scclEventConfig_t;

#define SCCL_EVENT_CONFIG_INITIALIZER                                                       \
  {                                                                                         \
    sizeof(scclEventConfig_t), SCCL_EVENT_CONFIG_MAGIC, SCCL_VERSION_CODE,                  \
        scclEventThresholdAdaptive, 1.0, 0.0, 2, 30, 1, 0, scclEventAverageCopies           \
  }

/* Applies a JSON object's keys over *config: "threshold" ("adaptive" | "static"), "horizon",
 * "static_threshold", "history", "initial_passes", "synchronous" (true | false),
 * "max_silent_passes", "averaging" ("copies" | "differences"). Unknown keys,
 * wrong types and out-of-range values are scclInvalidArgument naming the key; *config is then
 * untouched. */
SCCL_API scclResult_t scclEventConfigFromJson(const char* json, scclEventConfig_t* config);

/* Creates the event communicator of this rank over comm. Collective over comm (every rank, same
 * order as other collectives).
 *   count, dtype     the flat parameter buffer: count elements of scclFloat32 or scclFloat64
 *   tensorSizes      ntensors (>= 1) element counts, each >= 1, summing to count: the buffer is
 *                    these tensors back to back; each is one event unit
 *   neighbours       nneighbours distinct ranks other than this one; NULL (with nneighbours 0)
 *                    means the ring {rank - 1, rank + 1} (one neighbour with 2 ranks, none with 1).
 *                    The graph must be symmetric: j lists i whenever i lists j.
 *   weights          NULL: 1 / (1 + neighbours) for the own tensor and each neighbour's copy; else
 *                    1 + nneighbours non-negative weights summing to 1: weights[0] for the own
 *                    tensor, weights[1 + j] for neighbours[j]
 *   config           SCCL_EVENT_CONFIG_INITIALIZER or modified
 * Errors: scclInvalidArgument for a bad argument on this rank (returned at once; the other ranks
 * then wait in the agreement check until the communicator's timeout, as for sparsifiers);
 * scclInvalidUsage on every rank when the ranks disagree on count, dtype, tensor sizes or config,
 * when the graph is not symmetric, or when the transport has no one-sided windows. */
SCCL_API scclResult_t scclEventCommCreate(scclEventComm_t* eventComm, scclComm_t comm,
                                          size_t count, scclDataType_t dtype,
                                          const size_t* tensorSizes, int ntensors,
                                          const int* neighbours, int nneighbours,
                                          const double* weights, const scclEventConfig_t* config);

/* Collective like creation (the MPI transport frees its window with MPI_Win_free). */
SCCL_API scclResult_t scclEventCommDestroy(scclEventComm_t eventComm);

/* One training pass (call after the optimizer step, once per iteration): for each tensor of
 * params, decide the event from its norm change and on an event put it into every neighbour's
 * window; then (after the pass barrier in synchronous mode) replace each tensor by the weighted
 * average of itself and the latest copies received from the neighbours. params is updated in
 * place; count and dtype must be the event communicator's. A neighbour that has sent nothing yet
 * (only possible with initialPasses 0 and a static threshold) counts with the own tensor. */
SCCL_API scclResult_t scclEventCommStep(scclEventComm_t eventComm, void* params, size_t count,
                                        scclDataType_t dtype, void* stream);

/* The model average for evaluation: out = (sum over ranks of params) / nranks, in rank order,
 * bitwise identical on every rank (a dense all-reduce, as the paper does after training).
 * Collective; params == out allowed. */
SCCL_API scclResult_t scclEventCommAverageModel(scclEventComm_t eventComm, const void* params,
                                                void* out, size_t count, scclDataType_t dtype,
                                                void* stream);

/* Statistics since creation. Set `size` to sizeof(scclEventStats_t). A message is one tensor put
 * to one neighbour; "dense" counts what D-PSGD sends: every tensor to every neighbour every pass. */
typedef struct {
  size_t size;
  uint64_t passes;          /* scclEventCommStep calls completed */
  uint64_t events;          /* tensor events (each sends the tensor to every neighbour) */
  uint64_t lastPassEvents;  /* events of the last pass */
  uint64_t messagesSent;    /* events x neighbours */
  uint64_t messagesDense;   /* passes x tensors x neighbours */
  double messageFraction;   /* messagesSent / messagesDense (0 before the first pass) */
  uint64_t bytesSent;       /* payload bytes put, plus 16 protocol bytes per message */
  uint64_t bytesDense;      /* payload bytes D-PSGD would send */
  double byteFraction;      /* bytesSent / bytesDense */
  double meanStaleness;     /* mean over passes, neighbours and tensors of (pass - pass in
                               which the copy in use was sent) */
  uint64_t maxStaleness;
  uint64_t readRetries;     /* window reads repeated because a put completed during the copy */
  uint64_t missingCopies;   /* (neighbour, tensor) pairs averaged before any copy had arrived */
  double timeTriggerUs;     /* cumulative: norms and trigger decisions */
  double timePutUs;         /* one-sided puts */
  double timeSyncUs;        /* pass barriers (synchronous mode) */
  double timeReadUs;        /* window reads */
  double timeAverageUs;     /* averaging */
} scclEventStats_t;

SCCL_API scclResult_t scclEventCommGetStats(scclEventComm_t eventComm, scclEventStats_t* stats);

/* Per tensor (ntensors entries each, ntensors as at creation): events fired so far and the
 * current threshold (the one the next pass compares with; horizon x slope or the static one).
 * thresholds may be NULL. */
SCCL_API scclResult_t scclEventCommGetTensorStats(scclEventComm_t eventComm, uint64_t* events,
                                                  double* thresholds, int ntensors);

/* Checkpoints, as for sparsifiers (sparsecoll.h; docs/api.md "Checkpoints"): the pass number,
 * every tensor's trigger, the own copy as last sent, the copies received from each neighbour
 * with their versions and passes, and the statistics, in one versioned, CRC-checked blob per rank.
 * Export is local. Import is collective, into an event communicator created with the same count,
 * dtype, tensor sizes, neighbours, weights and config on a communicator of the same size, on the
 * rank that wrote it: a malformed or foreign blob is scclInvalidArgument on its rank and
 * scclInvalidUsage on the others; in synchronous mode ranks whose blobs are of different passes
 * all get scclInvalidUsage; nothing changes on an error. After a load each rank puts the copies it
 * held back into its own window (so a synchronous run continues bit for bit) and the ranks meet
 * in a barrier. */
SCCL_API scclResult_t scclEventCommGetStateSize(scclEventComm_t eventComm, size_t* bytes);
SCCL_API scclResult_t scclEventCommExportState(scclEventComm_t eventComm, void* buffer,
                                               size_t bytes, size_t* written);
SCCL_API scclResult_t scclEventCommImportState(scclEventComm_t eventComm, const void* buffer,
                                               size_t bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSECOLL_EVENT_H_ */
