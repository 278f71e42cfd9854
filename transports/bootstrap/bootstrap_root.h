// The root service of the bootstrap: serves one job (one unique id) in the process that called
// scclGetUniqueId. Every service of the process runs on one detached root thread that polls all
// their sockets together, so an id costs one listening socket (until its rendezvous completes or
// times out) and no thread of its own.
//
// Rendezvous: it accepts connections and checks each hello (magic, protocol version, job token,
// nranks equal to that of the ranks already joined, rank in range and not taken). A bad hello
// gets a Rejected frame with the reason and its connection is closed, while the service goes on:
// a stray or hostile connection cannot break the job. Each good hello gets a Joined frame; once
// all nranks ranks are in, each gets Accepted.
//
// Rounds: it then reads one RoundData frame from every rank, checks that all carry the same
// round number and size, and sends every rank the contributions concatenated in rank order. A
// mismatch, a protocol violation, or a rank that disconnects while a round is under way ends the
// job: every rank gets a RoundError frame (the reason names the first offending rank) and the
// connections are closed, so nobody waits for a round that cannot complete.
//
// Lifetime: the root thread owns every service and everything it uses (listening socket,
// connections, token) and shares no memory with their creators, so it cannot touch freed memory
// and does not keep the process from exiting. A service ends when every rank has closed its
// connection after the rendezvous, when the rendezvous does not complete within its timeout, or
// after a failed round; the thread ends with its last service and the next id starts it again.
// A child forked while the thread runs starts its own at its first id (the parent's services
// stay the parent's).
#pragma once

#include <cstdint>
#include <string>

#include "sparsecoll/sparsecoll.h"

namespace sccl {

// Starts a root listening on `interface_name` (see findListenAddress; empty: 127.0.0.1) and
// writes the id naming it to *id. The rendezvous must complete within rendezvous_timeout_ms.
// bootstrapCreateUniqueId calls it with SCCL_SOCKET_IFNAME and SCCL_BOOTSTRAP_TIMEOUT_MS; tests
// call it directly. *id is written only on success.
scclResult_t startBootstrapRoot(const std::string& interface_name, int64_t rendezvous_timeout_ms,
                                scclUniqueId* id);

}  // namespace sccl
