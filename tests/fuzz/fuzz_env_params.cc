// libFuzzer harness: the parsers of environment settings. Settings are read once per process
// (cached), so the harness calls the parsers themselves on every input: the integer reader
// (SCCL_TIMEOUT_MS, SCCL_CPU_THREADS, ...: strtoll with full-match check, default on anything
// else), the string reader, and the SCCL_DEBUG_SUBSYS mask parser. Input: up to three
// NUL-separated values. The integer reader reports a bad value on stderr: scripts/fuzz.sh runs
// this harness with -close_fd_mask=2 (libFuzzer and sanitizer reports still get through).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/log.h"
#include "core/setting.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string all(reinterpret_cast<const char*>(data), size);
  std::string values[3];
  size_t start = 0;
  for (std::string& value : values) {
    size_t end = all.find('\0', start);
    value = all.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  setenv("SCCL_FUZZ_INT", values[0].c_str(), 1);
  int64_t parsed = sccl::detail::readIntParam("SCCL_FUZZ_INT", -7);
  if (values[0].empty() && parsed != -7) std::abort();
  setenv("SCCL_FUZZ_STRING", values[1].c_str(), 1);
  if (sccl::detail::readStringParam("SCCL_FUZZ_STRING", "x") != values[1]) std::abort();
  (void)sccl::parseSubsysMask(values[2].c_str());
  return 0;
}
