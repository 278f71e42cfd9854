// libFuzzer harness: checkpoint blobs (scclSparsifierImportState, scclEventCommImportState) taken
// from the fuzz input, on one rank over the in-process transport. Each import must return
// success or scclInvalidArgument and never crash or read outside the blob (ASan + UBSan); a
// refused blob must leave the object exactly as it was (its export is compared byte for byte),
// and an accepted one must export and load again.
//
// Input layout: byte 0 chooses the target (bits 2-4: a sparsifier of one of six presets or the
// event communicator) and two fix-ups that let mutations get past the framing (bit 0: the CRC
// recomputed, bit 1: the header's total size set to the blob's); the rest is the blob. The seed
// corpus (tests/fuzz/corpus/checkpoint/) holds valid blobs of every target.
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sparsecoll/sparsecoll.h"

namespace {

constexpr size_t kCount = 300;
const char* const kPresets[] = {"micro", "exdyna", "sidco", "topk", "s2", "micro_sync_free"};
constexpr int kTargets = 7;  // six sparsifiers, then the event communicator
const size_t kTensorSizes[] = {100, 1, 199};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fuzz_checkpoint: %s\n", what);
  std::abort();
}

struct Fixture {
  scclComm_t comm = nullptr;
  scclSparsifier_t sparsifiers[6] = {};
  scclEventComm_t event = nullptr;

  Fixture() {
    scclUniqueId id;
    if (scclGetUniqueId(&id) != scclSuccess) die("scclGetUniqueId");
    if (scclCommInitRank(&comm, 1, id, 0) != scclSuccess) die("scclCommInitRank");
    std::vector<float> grad(kCount), out(kCount);
    for (int p = 0; p < 6; ++p) {
      scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
      config.algorithm = kPresets[p];
      config.density = 0.05;
      if (scclSparsifierCreate(&sparsifiers[p], comm, kCount, scclFloat32, &config) != scclSuccess)
        die("scclSparsifierCreate");
      for (int call = 0; call < 3; ++call) {
        for (size_t i = 0; i < kCount; ++i) grad[i] = float((i * 37 + call * 11) % 101) - 50.0f;
        if (scclSparseAllreduce(grad.data(), out.data(), kCount, scclFloat32, scclSum,
                                sparsifiers[p], comm, nullptr) != scclSuccess)
          die("scclSparseAllreduce");
      }
    }
    scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;
    config.initialPasses = 1;
    if (scclEventCommCreate(&event, comm, kCount, scclFloat32, kTensorSizes, 3, nullptr, 0, nullptr,
                            &config) != scclSuccess)
      die("scclEventCommCreate");
    std::vector<float> x(kCount, 1.0f);
    for (int pass = 0; pass < 3; ++pass) {
      x[size_t(pass)] += 1.0f;
      if (scclEventCommStep(event, x.data(), kCount, scclFloat32, nullptr) != scclSuccess)
        die("scclEventCommStep");
    }
  }
};

std::vector<unsigned char> exportOf(int target, Fixture& f) {
  size_t bytes = 0;
  scclResult_t sized = target < 6 ? scclSparsifierGetStateSize(f.sparsifiers[target], &bytes)
                                  : scclEventCommGetStateSize(f.event, &bytes);
  if (sized != scclSuccess) die("GetStateSize");
  std::vector<unsigned char> blob(bytes);
  scclResult_t exported =
      target < 6 ? scclSparsifierExportState(f.sparsifiers[target], blob.data(), bytes, nullptr)
                 : scclEventCommExportState(f.event, blob.data(), bytes, nullptr);
  if (exported != scclSuccess) die("ExportState");
  return blob;
}

scclResult_t importInto(int target, Fixture& f, const std::vector<unsigned char>& blob) {
  const void* data = blob.empty() ? nullptr : blob.data();
  return target < 6 ? scclSparsifierImportState(f.sparsifiers[target], data, blob.size())
                    : scclEventCommImportState(f.event, data, blob.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fixture;
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const int target = (flags >> 2) % kTargets;
  std::vector<unsigned char> blob(data + 1, data + size);
  if ((flags & 2) && blob.size() >= 24) {
    const uint64_t total = blob.size();
    std::memcpy(blob.data() + 16, &total, 8);
  }
  if ((flags & 1) && blob.size() >= 16) {
    const uint32_t crc =
        static_cast<uint32_t>(crc32_z(crc32_z(0L, Z_NULL, 0), blob.data() + 16, blob.size() - 16));
    std::memcpy(blob.data() + 12, &crc, 4);
  }
  const std::vector<unsigned char> before = exportOf(target, fixture);
  const scclResult_t result = importInto(target, fixture, blob);
  if (result == scclSuccess) {
    if (importInto(target, fixture, exportOf(target, fixture)) != scclSuccess)
      die("an accepted blob's export does not load again");
    return 0;
  }
  if (result != scclInvalidArgument)
    die("a blob was refused with another code than invalid argument");
  if (exportOf(target, fixture) != before) die("a refused blob changed the object");
  return 0;
}
