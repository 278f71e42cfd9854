// The link a communicator runs on, measured: a few small all-reduces for the latency
// and one bulk all-reduce for the bandwidth, through the communicator's own transport, so that the
// cost model (tuning/link_model.h) prices collectives as this transport moves them.
//
// Steps (every rank): one warm-up and 5 timed all-reduces of one uint64 (median: t_small); one
// warm-up and 2 timed all-reduces of 64K float32 = 256 KiB (fastest: t_bulk); the ranks take the
// maximum of each over ranks (one all-reduce), so every rank derives the same model:
//   alpha = t_small / L,  beta = 2 (n-1)/n 256 KiB / max(t_bulk - 2 L alpha, t_bulk / 2),
//   L = ceil(log2 n)
// (the link model's recursive-doubling and Rabenseifner forms, inverted; the max keeps beta finite
// when noise makes the bulk call look no slower than its latency terms). About 8 + 512 KiB of
// traffic per rank: 3 ms on 1 Gbit/s links, well under 1 ms in one process. One rank: nothing to
// measure (alpha 0, beta unbounded).
//
// Once per communicator: the first "auto" sparsifier probes, later ones reuse what it found
// (scclComm::link_probed). A latency or rate given by settings (tuning/link_settings.h) replaces
// its measurement, which is then skipped; the agreement all-reduce still runs once, for the core
// sharing.
#pragma once

#include <string>

#include "sparsecoll/sparsecoll.h"
#include "tuning/link_model.h"
#include "tuning/link_settings.h"

struct scclComm;

namespace sccl {

struct LinkProbe {
  LinkModel link;
  // How many times slower a rank's local work runs than the calibration's rank alone, because
  // ranks share this host's hardware threads: max(1, ranks on the host x the CPU kernels' threads
  // per rank (SCCL_CPU_THREADS, 0 = one per hardware thread) / the host's hardware threads). The
  // largest over ranks.
  int ranks_per_machine = 1;
  double seconds = 0;   // the probe's own time on this rank (0 when reused)
  bool reused = false;  // the communicator's earlier probe, not measured again
  GivenLink given;      // what the settings gave instead of a measurement
};

// Collective: every rank of comm calls it at the same point, with the same `given` (agreed before).
// Transport failures are recorded on the communicator as for any collective.
scclResult_t probeLink(scclComm* comm, const GivenLink& given, LinkProbe* out);

// "alpha 12.0 us, 0.94 Gbit/s (probed)", "(given)", "(reused)", "(given latency, probed rate)".
std::string describeLinkProbe(const LinkProbe& probe);

}  // namespace sccl
