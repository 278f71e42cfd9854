// The event communicator: one rank's EventGraD state over a communicator (neighbours, weights,
// tensor layout, per-tensor triggers, the one-sided window and the copies received from each
// neighbour) and one pass of the algorithm (event_comm.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/aligned_buffer.h"
#include "event/event_config.h"
#include "event/event_trigger.h"
#include "sparsecoll/sparsecoll.h"
#include "transports/slot_window.h"
#include "transports/window.h"

struct scclComm;

struct scclEventComm {
  static constexpr uint64_t kMagic = 0x5343434c45766e74ull;  // "SCCLEvnt"
  uint64_t magic = kMagic;

  scclComm* comm = nullptr;
  size_t count = 0;
  scclDataType_t dtype = scclFloat32;
  size_t element_bytes = 4;
  std::vector<size_t> tensor_sizes;
  std::vector<size_t> tensor_offsets;  // element offset of each tensor in the flat buffer
  sccl::ResolvedEventConfig config;
  // What the ranks agree on at each collective call (comm/call_agreement.h): the identity every
  // rank gives this event communicator (1 + the number of its creation call) and the fingerprint
  // of its layout and config.
  uint64_t identity = 0;
  uint64_t fingerprint = 0;

  // Neighbours in ascending rank order, their weights (self_weight for the own tensor), and this
  // rank's position in each neighbour's (ascending) list, i.e. the region of their window that
  // this rank writes.
  std::vector<int> neighbours;
  std::vector<double> neighbour_weights;
  double self_weight = 1.0;
  std::vector<size_t> position_at_neighbour;

  // Window: one region per neighbour (the one it writes), each a slot per tensor.
  std::unique_ptr<sccl::Window> window;
  sccl::SlotRegion region;

  std::vector<sccl::TensorTrigger> triggers;
  // Averaging by differences: this rank's own copy as last sent (what its neighbours hold).
  sccl::AlignedBuffer sent_copy;
  uint64_t pass = 0;

  // Copies received: received[j] holds neighbour j's latest copy of the whole buffer, and per
  // (j, tensor) the write held and the pass it was sent in (version 0: none yet).
  std::vector<sccl::AlignedBuffer> received;
  std::vector<sccl::SlotCopy> received_copy;  // [j * ntensors + t]

  // Scratch reused by every pass, so that the steady state allocates nothing.
  std::vector<uint8_t> fired;
  std::vector<sccl::SlotWrite> writes;
  std::vector<void*> read_outs;
  sccl::SlotReadScratch read_scratch;
  std::vector<const float*> copies_float;  // averaging inputs, per parameter type
  std::vector<const double*> copies_double;

  scclEventStats_t stats{};
  double staleness_sum = 0.0;
  uint64_t staleness_samples = 0;
};

namespace sccl {

struct EventLayout {
  size_t count = 0;
  scclDataType_t dtype = scclFloat32;
  const size_t* tensor_sizes = nullptr;
  int ntensors = 0;
  const int* neighbours = nullptr;  // null: ring
  int nneighbours = 0;
  const double* weights = nullptr;  // null: uniform
};

scclResult_t eventCommCreate(scclComm* comm, const EventLayout& layout,
                             const scclEventConfig_t& config, scclEventComm** out);
void eventCommDestroy(scclEventComm* ec);
scclResult_t eventCommStep(scclEventComm* ec, void* params);
scclResult_t eventCommAverageModel(scclEventComm* ec, const void* params, void* out);
scclResult_t eventCommStats(const scclEventComm* ec, scclEventStats_t* stats);

}  // namespace sccl
