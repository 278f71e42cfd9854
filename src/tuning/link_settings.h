// The link given by settings instead of measured (the probe skipped, or its result overridden):
// SCCL_LINK_LATENCY_NS and SCCL_LINK_RATE_MBITS (core/settings.cc). Each one
// given replaces what the link probe (tuning/link_probe.h) would measure of it, and the probe
// skips that measurement; with both given it measures nothing. Every rank must give the same
// values: they are part of what an "auto" creation agrees on (tuning/auto_choice.cc), so ranks
// that differ all get scclInvalidUsage.
#pragma once

#include <cstdint>
#include <string>

#include "sparsecoll/sparsecoll.h"
#include "tuning/link_model.h"

namespace sccl {

struct GivenLink {
  int64_t latency_ns = -1;  // alpha, ns per message step; -1: measure
  int64_t rate_mbits = 0;   // beta, Mbit/s of one rank's link each way; 0: measure

  bool hasLatency() const { return latency_ns >= 0; }
  bool hasRate() const { return rate_mbits > 0; }
};

// The settings of this process (read once), as given: checkGivenLink tells whether they hold.
GivenLink givenLinkSettings();

// scclInvalidArgument naming the variable for a latency below -1 or above 10 s, or a rate below 0
// or above 10 Tbit/s. An "auto" creation checks after its agreement, so that every rank returns
// the same error and the communicator stays usable.
scclResult_t checkGivenLink(const GivenLink& given);

// The given latency and rate in place of link's (each only where given).
void applyGivenLink(const GivenLink& given, LinkModel* link);

// Mixed into the "auto" creation's agreement record: equal settings give equal fingerprints.
uint64_t givenLinkFingerprint(const GivenLink& given);

// "probed", or e.g. "given 20000 ns, probed rate" for logs and mismatch messages.
std::string describeGivenLink(const GivenLink& given);

}  // namespace sccl
