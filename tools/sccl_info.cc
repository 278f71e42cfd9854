// Uses library internals (links sparsecoll_objects): the settings registry and the chosen kernels.
// sccl_info: what this sparsecoll is (version, build configuration: transports, kernel backends)
// and every setting it reads, with default, current value and help, in the manner of ucx_info.
#include <cstdio>
#include <cstring>
#include <string>

#include "comm/comm_compatibility.h"
#include "core/memory_space.h"
#include "core/setting.h"
#include "core/settings.h"
#include "kernels/kernels.h"
#include "sccl_build_config.h"
#include "sparsifier/sparse_config.h"
#include "sparsecoll/sparsecoll.h"
#include "transports/transport_registry.h"
#if SCCL_BUILD_WITH_UCX
#include "transports/ucx/ucx_info.h"
#endif

namespace {

void printBuild() {
  int version = 0;
  scclGetVersion(&version);
  std::printf("# sparsecoll %d.%d.%d%s (version code %d)\n", version / 10000, (version / 100) % 100,
              version % 100, SCCL_SUFFIX, version);
  std::printf("# build: %s, %s\n", SCCL_BUILD_TYPE, SCCL_BUILD_COMPILER);
  std::printf("# engines built in: %s\n",
              sccl::buildFeatureList(sccl::thisBuildFeatures()).c_str());
  std::printf("#   MPI:  %s\n",
              SCCL_BUILD_WITH_MPI ? "yes (MPI " SCCL_BUILD_MPI_VERSION ")" : "no");
  std::printf("#   UCX:  %s\n",
              SCCL_BUILD_WITH_UCX ? "yes (UCX " SCCL_BUILD_UCX_VERSION ")" : "no");
#if SCCL_BUILD_WITH_UCX
  sccl::UcxLibraryInfo ucx = sccl::queryUcxLibrary();
  std::printf("#         loaded UCX %s; device buffers: %s\n", ucx.version.c_str(),
              ucx.cuda_memory ? "through pinned host staging (UCX's CUDA memory type unused)"
                              : "through pinned host staging (no CUDA in UCX)");
  std::string found;
  for (const std::string& transport : ucx.transports) found += " " + transport;
  std::printf("#         UCX transports found (UCX_TLS selects among them):%s\n", found.c_str());
#endif
  std::printf("#   CUDA: %s\n", !SCCL_BUILD_WITH_CUDA ? "no"
                                : SCCL_BUILD_CUDA_KERNELS
                                    ? "yes (CUDA " SCCL_BUILD_CUDA_VERSION
                                      "): kernels for architectures " SCCL_BUILD_CUDA_ARCHITECTURES
                                    : "yes (CUDA " SCCL_BUILD_CUDA_VERSION
                                      "): device pointers recognised; no kernels (no nvcc)");
  std::printf("#   NCCL: %s\n",
              SCCL_BUILD_WITH_NCCL ? "yes (" SCCL_BUILD_NCCL_LIBRARY "): transport nccl" : "no");
}

void printTransportsAndBackends() {
  std::printf("# transports:\n");
  for (const sccl::TransportEntry& entry : sccl::transportRegistry()) {
    std::printf("#   %-8s %s\n", entry.name, entry.description);
  }
  // The rule of comm/default_transport.h, for this build.
  std::printf(
      "#   default of scclCommInitRank (no config transport, no SCCL_TRANSPORT): local "
      "when every rank is a thread of one process; across processes %s\n",
      SCCL_BUILD_WITH_UCX   ? "ucx (built in)"
      : SCCL_BUILD_WITH_MPI ? "mpi when every process initialised MPI (no UCX built in)"
                            : "none (neither UCX nor MPI built in: local only)");
  std::printf("# kernel backends:\n");
  std::printf("#   %-12s host memory (chosen at run time)\n", sccl::cpuKernels().name());
  std::printf("#   %-12s %s\n", "cuda",
              SCCL_BUILD_CUDA_KERNELS
                  ? "device memory, caller's stream; collectives over nccl, or over local/mpi/ucx "
                    "through pinned host staging (docs/gpu.md)"
              : sccl::deviceMemoryRecognised() ? "device pointers recognised, no kernels"
                                               : "not built");
}

// What "hierarchy": "node" and the cost model take as this process's node (comm_compatibility.h).
void printNode() {
  const char* source = nullptr;
  const std::string identity = sccl::thisNodeIdentity(&source);
  std::printf("# node identity of this process: %s (from the %s", identity.c_str(), source);
  if (sccl::paramRanksPerNode() > 0) {
    std::printf("; SCCL_RANKS_PER_NODE=%lld groups consecutive ranks instead)\n",
                static_cast<long long>(sccl::paramRanksPerNode()));
  } else {
    std::printf("; ranks with the same identity share a node)\n");
  }
}

void printSettings() {
  std::printf("# settings (environment variable = value in effect  [default]  help):\n");
  for (const sccl::ParamInfo& param : sccl::registeredParams()) {
    std::printf("%s=%s\n    [default: %s] %s\n", param.env_name.c_str(),
                param.current_value().c_str(), param.default_value.c_str(), param.help.c_str());
  }
}

// The numeric knobs of scclSparseConfig_t / scclSparseConfigFromJson, from the axes' tables.
void printSparseKnobs() {
  std::printf(
      "# sparse configuration knobs (JSON key / scclSparseConfig_t field  [default]  "
      "range: help):\n");
  for (const sccl::KnobGroup& group : sccl::sparseConfigKnobs()) {
    std::printf("#   %s:\n", group.axis);
    for (const sccl::KnobDescriptor& knob : *group.knobs) {
      std::printf("%s / %s\n    [default: %g] %s%s: %s\n", knob.key, knob.field,
                  knob.defaultValue(), knob.integer ? "an integer " : "",
                  sccl::knobRangeText(knob).c_str(), knob.help);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool settings_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-c") == 0) {
      settings_only = true;
    } else {
      std::fprintf(stderr, "usage: %s [-c]\n  -c  print only the settings\n", argv[0]);
      return 2;
    }
  }
  if (!settings_only) {
    printBuild();
    printTransportsAndBackends();
    printNode();
  }
  printSettings();
  if (!settings_only) printSparseKnobs();
  return 0;
}
