// What the UCX library this process loaded offers, for sccl_info and the logs: its version, the
// transports and devices it found (before UCX_TLS filters them), and whether it can reach
// device memory (a CUDA memory type), which decides whether device buffers go straight through.
#pragma once

#include <string>
#include <vector>

namespace sccl {

struct UcxLibraryInfo {
  std::string version;                  // ucp_get_version_string()
  std::vector<std::string> transports;  // "transport/device", e.g. "posix/memory", "tcp/eth0"
  bool cuda_memory = false;             // UCX built with CUDA support
};

UcxLibraryInfo queryUcxLibrary();

}  // namespace sccl
