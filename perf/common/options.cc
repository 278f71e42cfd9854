// Parsing of the shared perf options (getopt, nccl-tests letters where they exist).
#include "options.h"

#include "watchdog.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

namespace sccl_perf {
namespace {

struct DtypeEntry {
  const char* name;
  scclDataType_t dtype;
  size_t bytes;
};
// Names as nccl-tests spells them, plus the long forms.
const DtypeEntry kDtypes[] = {{"float", scclFloat32, 4},    {"float32", scclFloat32, 4},
                              {"double", scclFloat64, 8},   {"float64", scclFloat64, 8},
                              {"half", scclFloat16, 2},     {"float16", scclFloat16, 2},
                              {"bfloat16", scclBfloat16, 2}};

bool parseDtype(const char* text, scclDataType_t* dtype) {
  for (const DtypeEntry& entry : kDtypes) {
    if (std::strcmp(text, entry.name) == 0) {
      *dtype = entry.dtype;
      return true;
    }
  }
  return false;
}

bool parseInt(const char* text, int min_value, int* value) {
  char* end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || parsed < min_value || parsed > 1000000000) return false;
  *value = static_cast<int>(parsed);
  return true;
}

}  // namespace

bool parseNumberList(const char* text, double above, double at_most, std::vector<double>* out) {
  out->clear();
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || *end != '\0' || !(value > above && value <= at_most)) return false;
    out->push_back(value);
  }
  return !out->empty();
}

namespace {

bool parseDensities(const char* text, std::vector<double>* densities) {
  return parseNumberList(text, 0, 1, densities);
}

void printUsage(const char* program, const char* description, const std::vector<ExtraFlag>& extra,
                const PerfOptions& defaults) {
  std::printf("%s: %s\nusage: %s [options]   (defaults in brackets)\n", program, description,
              program);
  std::printf("  -b SIZE   smallest size [%zu]   -e SIZE  largest size [%zu]\n", defaults.min_size,
              defaults.max_size);
  std::printf(
      "  -f X      multiply the size by X per step   -i SIZE  add SIZE per step [%zu]\n"
      "  -u UNIT   unit of -b/-e/-i: bytes (as nccl-tests) or elements [%s]\n"
      "            SIZE takes the binary suffixes K, M, G (64M = 67108864); 26000000 is exact\n"
      "  -d TYPE   float (float32), double (float64), half (float16), bfloat16 [%s]\n"
      "  -n N      timed iterations; the median is reported [%d]\n"
      "  -w N      warm-up iterations [%d]\n"
      "  -c 0|1    verify results against a scalar reference; any wrong -> exit 1 [%d]\n"
      "  -J FILE   also write the results as JSON to FILE\n"
      "  -T SEC    timeout: exit 124 when no measurement starts for SEC seconds; communicating\n"
      "            binaries also give every wait this deadline [%s]\n"
      "  -D LIST   densities, comma separated\n"
      "  -t N      CPU threads (sets SCCL_CPU_THREADS) [the library's default]\n"
      "  -s SEED   seed of the input generator [%llu]\n"
      "  -g 0|1    1: buffers in GPU memory, timed with CUDA events (where supported) [0]\n",
      defaults.step_size, defaults.sizes_are_elements ? "elements" : "bytes",
      dtypeName(defaults.dtype), defaults.iters, defaults.warmup, defaults.check,
      defaults.timeout_s > 0 ? std::to_string(defaults.timeout_s).c_str()
                             : "none; waits: SCCL_TIMEOUT_MS",
      static_cast<unsigned long long>(defaults.seed));
  for (const ExtraFlag& flag : extra) std::printf("  -%c %s\n", flag.letter, flag.help);
}

}  // namespace

bool parseSize(const char* text, size_t* value) {
  char* end = nullptr;
  unsigned long long parsed = std::strtoull(text, &end, 10);
  if (end == text) return false;
  unsigned long long scale = 1;
  if (*end == 'K' || *end == 'k') scale = 1ull << 10;
  if (*end == 'M' || *end == 'm') scale = 1ull << 20;
  if (*end == 'G' || *end == 'g') scale = 1ull << 30;
  if (scale != 1) ++end;
  if (*end != '\0' || __builtin_mul_overflow(parsed, scale, &parsed)) return false;
  *value = static_cast<size_t>(parsed);
  return true;
}

const char* dtypeName(scclDataType_t dtype) {
  for (const DtypeEntry& entry : kDtypes) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "invalid";
}

size_t dtypeSize(scclDataType_t dtype) {
  for (const DtypeEntry& entry : kDtypes) {
    if (entry.dtype == dtype) return entry.bytes;
  }
  return 0;
}

bool parseOptions(int argc, char** argv, const char* description,
                  const std::vector<ExtraFlag>& extra, PerfOptions* options, int* exit_code) {
  const PerfOptions defaults = *options;  // as the binary set them, for the usage text
  std::string letters = "b:e:f:i:u:d:n:w:c:J:T:D:t:s:g:h";
  for (const ExtraFlag& flag : extra) letters += std::string(1, flag.letter) + ":";
  *exit_code = 2;
  int opt;
  while ((opt = getopt(argc, argv, letters.c_str())) != -1) {
    bool ok = true;
    switch (opt) {
      case 'b': ok = parseSize(optarg, &options->min_size); break;
      case 'e': ok = parseSize(optarg, &options->max_size); break;
      case 'f':
        options->step_factor = std::strtod(optarg, nullptr);
        ok = options->step_factor > 1;
        break;
      case 'i': ok = parseSize(optarg, &options->step_size) && options->step_size > 0; break;
      case 'u':
        options->sizes_are_elements = std::strcmp(optarg, "elements") == 0;
        ok = options->sizes_are_elements || std::strcmp(optarg, "bytes") == 0;
        break;
      case 'd': ok = parseDtype(optarg, &options->dtype); break;
      case 'n': ok = parseInt(optarg, 1, &options->iters); break;
      case 'w': ok = parseInt(optarg, 0, &options->warmup); break;
      case 'c': ok = parseInt(optarg, 0, &options->check); break;
      case 'J': options->json_path = optarg; break;
      case 'T':
        ok = parseInt(optarg, 1, &options->timeout_s) && options->timeout_s <= 2000000;
        break;
      case 'D': ok = parseDensities(optarg, &options->densities); break;
      case 't': ok = parseInt(optarg, 1, &options->threads); break;
      case 's': options->seed = std::strtoull(optarg, nullptr, 10); break;
      case 'g': ok = parseInt(optarg, 0, &options->device) && options->device <= 1; break;
      case 'h':
        printUsage(argv[0], description, extra, defaults);
        *exit_code = 0;
        return false;
      default: {
        ok = false;
        for (const ExtraFlag& flag : extra) {
          if (flag.letter == opt) ok = flag.set(optarg);
        }
      }
    }
    if (!ok) {
      // getopt has already named an unknown option or a missing argument ('?').
      if (opt != '?') std::fprintf(stderr, "%s: bad value for -%c\n", argv[0], opt);
      printUsage(argv[0], description, extra, defaults);
      return false;
    }
  }
  if (optind < argc || options->min_size == 0 || options->min_size > options->max_size) {
    std::fprintf(stderr, "%s: need 0 < -b <= -e and no extra arguments\n", argv[0]);
    return false;
  }
  watchdogStart(options->timeout_s);
  if (options->threads > 0) setenv("SCCL_CPU_THREADS", std::to_string(options->threads).c_str(), 1);
  return true;
}

std::vector<size_t> elementCounts(const PerfOptions& options) {
  size_t unit = options.sizes_are_elements ? 1 : dtypeSize(options.dtype);
  std::vector<size_t> counts;
  for (size_t size = options.min_size; size <= options.max_size;) {
    size_t count = size / unit;
    if (count > 0 && (counts.empty() || counts.back() != count)) counts.push_back(count);
    size_t next = options.step_factor > 1 ? static_cast<size_t>(size * options.step_factor)
                                          : size + options.step_size;
    if (next <= size) break;
    size = next;
  }
  return counts;
}

}  // namespace sccl_perf
