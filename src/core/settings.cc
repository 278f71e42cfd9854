// Every environment variable sparsecoll reads, with its default and help text.
#include "core/settings.h"

#include "core/setting.h"

SCCL_PARAM_STRING(Debug, "DEBUG", "", "Log level: VERSION, WARN, INFO or TRACE (empty: off)")
SCCL_PARAM_STRING(DebugSubsys, "DEBUG_SUBSYS", "ALL",
                  "Comma list of INIT,COLL,TRANSPORT,BOOTSTRAP,KERNEL,ALL; a leading ^ inverts")
SCCL_PARAM_STRING(DebugFile, "DEBUG_FILE", "",
                  "Write the log to this file instead of stderr (%h: host name, %p: pid)")
SCCL_PARAM_INT(TimeoutMs, "TIMEOUT_MS", 30000,
               "Deadline in ms of every wait of a communicator, 1 .. 2147483647 (config field "
               "timeoutMs wins)")
SCCL_PARAM_STRING(Transport, "TRANSPORT", "",
                  "Transport when the config names none: local, mpi, ucx, nccl or auto (empty: "
                  "mpi for scclCommInitMpi, auto otherwise: local when every rank is a thread of "
                  "one process, else ucx when built, else mpi when every process initialised it)")
SCCL_PARAM_STRING(SocketIfname, "SOCKET_IFNAME", "",
                  "Network interface the bootstrap listens on: NAME (that interface, else the "
                  "first whose name starts with NAME) or =NAME (exactly); empty: loopback")
SCCL_PARAM_INT(BootstrapTimeoutMs, "BOOTSTRAP_TIMEOUT_MS", 120000,
               "How long the rendezvous service of scclGetUniqueId waits for all ranks to join, "
               "1 .. 2147483647 ms")
SCCL_PARAM_INT(CpuThreads, "CPU_THREADS", 0,
               "Threads of the CPU kernel backend (0: one per hardware thread)")
SCCL_PARAM_STRING(CpuIsa, "CPU_ISA", "",
                  "Cap the CPU kernels' instruction set: scalar, avx2 or avx512 (empty: the best "
                  "the processor has)")
SCCL_PARAM_INT(AutoRetune, "AUTO_RETUNE", 1,
               "Algorithm \"auto\": 1 measures its calls and tries a preset estimated faster, or "
               "within 10 % (closer than the cost model can order them), keeping the fastest "
               "measured; 0 keeps the choice made at creation")
SCCL_PARAM_INT(AutoRetuneTolerance, "AUTO_RETUNE_TOLERANCE", 25,
               "Algorithm \"auto\": how far (percent, 1 .. 1000) a settled preset's time may "
               "move before auto decides again (checks at calls 100, 1000, ...); also caps the "
               "10 % within which another preset is tried")
SCCL_PARAM_STRING(NodeId, "NODE_ID", "",
                  "This process's node identity, instead of its host name: ranks that give the "
                  "same one share a node (containers or network namespaces that share or hide "
                  "host names); at most 63 bytes")
SCCL_PARAM_INT(RanksPerNode, "RANKS_PER_NODE", 0,
               "Nodes of consecutive ranks, this many on each (ranks 0 .. L-1 on the first), "
               "instead of the host identity: for tests and emulated clusters; 0 uses the host "
               "identity (SCCL_NODE_ID or the host name). The same on every rank (checked)")
SCCL_PARAM_INT(LinkLatencyNs, "LINK_LATENCY_NS", -1,
               "Algorithm \"auto\": the link's time per message step in ns (half a ping-pong's "
               "round trip, software included), 0 .. 10000000000, instead of the link probe's "
               "measurement; -1 measures it. The same on every rank (checked)")
SCCL_PARAM_INT(LinkRateMbits, "LINK_RATE_MBITS", 0,
               "Algorithm \"auto\": the rate of one rank's link in Mbit/s, 1 .. 10000000, "
               "instead of the link probe's measurement; 0 measures it. With "
               "SCCL_LINK_LATENCY_NS also given, no probe runs. The same on every rank (checked)")
