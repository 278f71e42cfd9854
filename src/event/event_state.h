// Event communicator checkpoints: what an EventGraD communicator carries from pass to pass (the
// pass number, every tensor's trigger, the own copy as last sent, the copies received from each
// neighbour with their versions and passes, the statistics), in core/state_blob.h's framing with
// the magic "SCCLEVCK" (scclEventCommGetStateSize / ExportState / ImportState; docs/api.md).
//
// Sections: shared, the pass number; own, every trigger (last norm, last event pass, threshold,
// slope history, events), each (neighbour, tensor)'s held copy (version, pass), the statistics,
// the staleness sums; bulk, the own copy as last sent (averaging by differences only) and the
// copies received from each neighbour.
//
// Import is collective. After the ranks agree (synchronous mode: on the pass number too), each
// rank writes the copies it held back into its own window with their versions and passes, then
// the ranks meet in a barrier: a neighbour's next put then finds the window as the saved run
// left it, so a synchronous run continues bit for bit.
#pragma once

#include <cstddef>

#include "event/event_comm.h"

namespace sccl {

scclResult_t eventCommStateSize(const scclEventComm& ec, size_t* bytes);
scclResult_t eventCommExportState(const scclEventComm& ec, void* buffer, size_t bytes,
                                  size_t* written);
scclResult_t eventCommImportState(scclEventComm& ec, const void* buffer, size_t bytes);

}  // namespace sccl
