// Reader for the gradient trace files written by scripts/gradient_traces.py (one worker's
// flattened float32 gradient at one training iteration). Header-only, for tests and benchmarks.
//
// Format (all integers little-endian; docs/gradient_traces.md has the full description):
//   offset 0  char[8]  magic "SCCLTRC1"
//          8  uint32   format version, 1
//         12  uint32   dtype, numbered as scclDataType_t; 7 (scclFloat32) is the only one
//         16  uint64   count, number of values in the payload
//         24  uint32   iteration (1-based optimizer step)
//         28  uint32   worker (0-based, < workers)
//         32  uint32   workers
//         36  uint32   reserved, 0
//         40  uint64   FNV-1a 64 checksum of the payload bytes
//         48  float32  count values
// The loader trusts nothing in the file: every field is checked, the size must equal
// 48 + 4 * count exactly, and the checksum must match before any value is returned.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace sccl_test {

struct GradientTrace {
  uint32_t iteration = 0;
  uint32_t worker = 0;
  uint32_t workers = 0;
  std::vector<float> values;
};

inline constexpr char kGradientTraceMagic[8] = {'S', 'C', 'C', 'L', 'T', 'R', 'C', '1'};
inline constexpr uint32_t kGradientTraceVersion = 1;
inline constexpr uint32_t kGradientTraceFloat32 = 7;  // scclFloat32
inline constexpr size_t kGradientTraceHeaderBytes = 48;
inline constexpr const char* kGradientTraceExtension = ".sccltrace";

// FNV-1a 64 of a byte range (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
inline uint64_t gradientTraceChecksum(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

namespace gradient_trace_detail {

inline uint32_t readLe32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

inline uint64_t readLe64(const unsigned char* p) {
  return static_cast<uint64_t>(readLe32(p)) | static_cast<uint64_t>(readLe32(p + 4)) << 32;
}

inline bool fail(std::string* error, const std::string& path, const std::string& what) {
  if (error != nullptr) *error = path + ": " + what;
  return false;
}

}  // namespace gradient_trace_detail

// Loads and validates one trace. On failure returns false, leaves *out untouched and, when
// error is not null, stores a message naming the file and the first check that failed.
inline bool loadGradientTrace(const std::string& path, GradientTrace* out, std::string* error) {
  using gradient_trace_detail::fail;
  using gradient_trace_detail::readLe32;
  using gradient_trace_detail::readLe64;
  if (out == nullptr) return fail(error, path, "no output trace given");

  std::ifstream file(path, std::ios::binary);
  if (!file) return fail(error, path, "cannot open");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
  if (file.bad()) return fail(error, path, "read error");
  if (bytes.size() < kGradientTraceHeaderBytes) {
    return fail(error, path,
                "file has " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                    std::to_string(kGradientTraceHeaderBytes) + "-byte header");
  }

  const unsigned char* h = bytes.data();
  if (std::memcmp(h, kGradientTraceMagic, sizeof(kGradientTraceMagic)) != 0) {
    return fail(error, path, "bad magic (not a SCCLTRC1 gradient trace)");
  }
  const uint32_t version = readLe32(h + 8);
  const uint32_t dtype = readLe32(h + 12);
  const uint64_t count = readLe64(h + 16);
  const uint32_t iteration = readLe32(h + 24);
  const uint32_t worker = readLe32(h + 28);
  const uint32_t workers = readLe32(h + 32);
  const uint32_t reserved = readLe32(h + 36);
  const uint64_t checksum = readLe64(h + 40);

  if (version != kGradientTraceVersion) {
    return fail(error, path,
                "format version " + std::to_string(version) + ", this reader knows version " +
                    std::to_string(kGradientTraceVersion));
  }
  if (dtype != kGradientTraceFloat32) {
    return fail(error, path, "dtype " + std::to_string(dtype) + ", only float32 (7) is supported");
  }
  if (iteration == 0) return fail(error, path, "iteration 0 (iterations are 1-based)");
  if (workers == 0) return fail(error, path, "workers is 0");
  if (worker >= workers) {
    return fail(
        error, path,
        "worker " + std::to_string(worker) + " is not below workers " + std::to_string(workers));
  }
  if (reserved != 0) return fail(error, path, "reserved field is not 0");

  const uint64_t payloadBytes = bytes.size() - kGradientTraceHeaderBytes;
  if (count > std::numeric_limits<uint64_t>::max() / sizeof(float) ||
      count * sizeof(float) != payloadBytes) {
    return fail(error, path,
                "header count " + std::to_string(count) + " needs " +
                    std::to_string(kGradientTraceHeaderBytes) + " + 4 * count bytes, file has " +
                    std::to_string(bytes.size()));
  }
  const unsigned char* payload = h + kGradientTraceHeaderBytes;
  const uint64_t actual = gradientTraceChecksum(payload, payloadBytes);
  if (actual != checksum) return fail(error, path, "payload checksum mismatch");

  GradientTrace trace;
  trace.iteration = iteration;
  trace.worker = worker;
  trace.workers = workers;
  trace.values.resize(static_cast<size_t>(count));
  for (size_t i = 0; i < trace.values.size(); ++i) {
    const uint32_t bits = readLe32(payload + 4 * i);
    std::memcpy(&trace.values[i], &bits, sizeof(bits));
  }
  *out = std::move(trace);
  return true;
}

// Paths of the regular *.sccltrace files directly in dir, sorted; empty if dir is missing.
inline std::vector<std::string> listGradientTraces(const std::string& dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code typeError;
    if (it->is_regular_file(typeError) && it->path().extension() == kGradientTraceExtension) {
      paths.push_back(it->path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace sccl_test
