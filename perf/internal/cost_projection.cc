// Uses library internals (links sparsecoll_objects): the cost model and the resolved sparse config.
// cost_projection: what the library's cost model (src/tuning/) predicts for one call of every
// preset at rank counts and link speeds no one here can run: 16 to 1,024 ranks, 1 to 400 Gbit/s.
//
// Per preset the local work is calibrated first on this machine (tuning/compute_calibration.h:
// one in-process rank, -n calls at min(count, -C) elements, seconds per element; -C 0 leaves it
// out and prints communication only; -K gives a preset's rate instead, e.g. one kept from an
// earlier calibration so that several projections use the same rates), then for every size
// (-b/-e, elements by default), density (-D), rank count (-R) and link (-G Gbit/s, -L latency in
// microseconds) the model's time, the bytes each rank sends and receives, and the time relative
// to dense in the same cell.
// Assumptions (tuning/call_shape.h): -I the gather inflation n max(k_i)/k' of the exclusive
// searches (default 1), -U the union factor k'/k of whole-vector selection (default: independent
// ranks, an upper bound). Everything printed is a prediction; docs/cost_model.md says where the
// model is wrong, docs/results/cost_model.md what it was checked against.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/report.h"
#include "sparsifier/sparse_config.h"
#include "tuning/call_shape.h"
#include "tuning/compute_calibration.h"
#include "tuning/cost_model.h"

namespace {

using namespace sccl_perf;

bool parseStrings(const char* text, std::vector<std::string>* out) {
  out->clear();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (sccl::findPreset(item.c_str()) == nullptr) return false;
    out->push_back(item);
  }
  return !out->empty();
}

// -K: "preset=ns,preset=ns": each named preset's local work per element in nanoseconds, given
// instead of calibrated (a calibration measured once and kept, so that several projections of one
// machine use the same rates).
bool parseGivenRates(const char* text, std::map<std::string, double>* out) {
  out->clear();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || sccl::findPreset(item.substr(0, eq).c_str()) == nullptr)
      return false;
    const std::string value = item.substr(eq + 1);
    char* end = nullptr;
    const double ns = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(ns) || ns < 0) return false;
    (*out)[item.substr(0, eq)] = ns;
  }
  return !out->empty();
}

// The preset at the density, every other setting at its default. `name` must outlive the result.
scclSparseConfig_t presetConfig(const std::string& name, double density) {
  scclSparseConfig_t config = SCCL_SPARSE_CONFIG_INITIALIZER;
  config.algorithm = name.c_str();
  config.density = density;
  return config;
}

// A finite number >= minimum.
bool parseNumber(const char* text, double minimum, double* out) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(value) || value < minimum) return false;
  *out = value;
  return true;
}

std::string joined(const std::vector<double>& values) {
  std::ostringstream text;
  for (size_t i = 0; i < values.size(); ++i) text << (i ? "," : "") << values[i];
  return text.str();
}

std::string givenRatesText(const std::map<std::string, double>& rates) {
  if (rates.empty()) return "none (calibrated)";
  std::ostringstream text;
  for (const auto& [name, ns] : rates) text << (text.tellp() > 0 ? "," : "") << name << "=" << ns;
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  PerfOptions options;
  options.min_size = options.max_size = 26000000;
  options.sizes_are_elements = true;
  options.iters = 5;
  options.densities = {0.001};
  std::vector<double> ranks = {16, 32, 64, 128, 256, 512, 1024};
  std::vector<double> gbits = {1, 10, 100, 400};
  double latency_us = 5;
  double inflation = 1;
  double union_factor = 0;
  double ranks_per_machine_option = 1;
  bool transport_shares_cores = false;
  double entry_ns = 0;
  double transport_byte_ns = 0;
  double transport_message_us = 0;
  size_t calibration_count = size_t(1) << 22;
  std::map<std::string, double> given_ns_per_element;
  std::vector<std::string> presets;
  for (const sccl::PresetEntry& p : sccl::presetRegistry()) presets.push_back(p.name);
  const std::vector<ExtraFlag> extra = {
      {'R', "rank counts, comma-separated (default 16,...,1024)",
       [&](const char* v) { return parseNumberList(v, 0, 1e6, &ranks); }},
      {'G', "link speeds in Gbit/s, comma-separated (default 1,10,100,400)",
       [&](const char* v) { return parseNumberList(v, 0, 1e6, &gbits); }},
      {'L', "link latency alpha in microseconds (default 5)",
       [&](const char* v) { return parseNumber(v, 0, &latency_us); }},
      {'I', "gather inflation n max(k_i)/k' of micro/exdyna (default 1)",
       [&](const char* v) { return parseNumber(v, 1, &inflation); }},
      {'U', "union factor k'/k of whole-vector selection (default: independent ranks)",
       [&](const char* v) { return parseNumber(v, 1, &union_factor); }},
      {'P', "ranks per machine sharing its cores (multiplies the local work; default 1)",
       [&](const char* v) { return parseNumber(v, 1, &ranks_per_machine_option); }},
      {'S', "1: the transport's work (-H, -W) shares the cores too (charged x -P; for nominal "
            "links between processes on one machine, e.g. the emulated cluster; default 0)",
       [&](const char* v) {
         double flag = 0;
         if (!parseNumber(v, 0, &flag) || (flag != 0 && flag != 1)) return false;
         transport_shares_cores = flag == 1;
         return true;
       }},
      {'E', "local work per entry received or aggregated, nanoseconds (default 0: not charged)",
       [&](const char* v) { return parseNumber(v, 0, &entry_ns); }},
      {'H', "the transport's CPU time per byte sent or received, nanoseconds (default 0)",
       [&](const char* v) { return parseNumber(v, 0, &transport_byte_ns); }},
      {'W', "the transport's CPU time per message, microseconds (default 0)",
       [&](const char* v) { return parseNumber(v, 0, &transport_message_us); }},
      {'C', "elements of the calibration calls (default 4194304; 0: communication only)",
       [&](const char* v) { return parseSize(v, &calibration_count); }},
      {'K', "local work per element given, not calibrated: preset=ns,... (others calibrated)",
       [&](const char* v) { return parseGivenRates(v, &given_ns_per_element); }},
      {'A', "presets, comma-separated (default all)",
       [&](const char* v) { return parseStrings(v, &presets); }},
  };
  int exit_code = 0;
  if (!parseOptions(argc, argv,
                    "cost_projection: the cost model's time per call of each preset for many "
                    "ranks and link speeds (a prediction)",
                    extra, &options, &exit_code))
    return exit_code;
  const int ranks_per_machine = int(ranks_per_machine_option);
  if (ranks_per_machine_option != ranks_per_machine || ranks_per_machine > 4096) {
    std::fprintf(stderr, "cost_projection: -P takes a whole number of ranks (got %g)\n",
                 ranks_per_machine_option);
    return 2;
  }
  for (double r : ranks) {
    if (r != std::floor(r) || r > 1e6) {
      std::fprintf(stderr, "cost_projection: -R takes whole rank counts (got %g)\n", r);
      return 2;
    }
  }

  KeyValues described = machineDescription(options);
  KeyValues settings = {{"latency_us", std::to_string(latency_us)},
                        {"gbits", joined(gbits)},
                        {"ranks", joined(ranks)},
                        {"gather_inflation", std::to_string(inflation)},
                        {"union_factor", union_factor > 0 ? std::to_string(union_factor)
                                                          : std::string("independent")},
                        {"ranks_per_machine", std::to_string(ranks_per_machine)},
                        {"transport_shares_cores", transport_shares_cores ? "1" : "0"},
                        {"entry_ns", std::to_string(entry_ns)},
                        {"transport_byte_ns", std::to_string(transport_byte_ns)},
                        {"transport_message_us", std::to_string(transport_message_us)},
                        {"calibration_elements", std::to_string(calibration_count)},
                        {"calibration_calls", std::to_string(options.iters)},
                        {"given_ns_per_element", givenRatesText(given_ns_per_element)},
                        {"dtype", dtypeName(options.dtype)}};
  std::printf("# cost_projection: PREDICTIONS of the library's cost model (src/tuning/), not "
              "measurements\n");
  printKeyValues(stdout, described);
  printKeyValues(stdout, settings);

  ResultTable table({{"elements", "count", 11, -1},
                     {"density", "density", 8, 4},
                     {"algorithm", "algorithm", 17, -1},
                     {"ranks", "ranks", 6, -1},
                     {"Gbit/s", "gbits", 7, 1},
                     {"time_ms", "time_ms", 10, 3},
                     {"comm_ms", "comm_ms", 10, 3},
                     {"local_ms", "local_ms", 9, 3},
                     {"entries_ms", "aggregate_ms", 10, 3},
                     {"sent_MB", "sent_mb", 9, 3},
                     {"recv_MB", "received_mb", 9, 3},
                     {"colls", "collectives", 5, -1},
                     {"msgs", "messages", 5, -1},
                     {"entries", "entries", 9, -1},
                     {"vs_dense", "speedup_vs_dense", 9, 2}});
  table.printHeader(stdout);
  // Dense is predicted in every cell (the vs_dense column), even when -A leaves out its rows.
  std::vector<std::string> predicted_presets = presets;
  if (std::find(presets.begin(), presets.end(), "dense") == presets.end())
    predicted_presets.push_back("dense");
  for (size_t count : elementCounts(options)) {
    for (double density : options.densities) {
      // Local work per element of each preset at this density, on this machine.
      std::map<std::string, double> local;
      for (const std::string& name : predicted_presets) {
        double per_element = 0;
        if (const auto given = given_ns_per_element.find(name);
            given != given_ns_per_element.end()) {
          local[name] = given->second * 1e-9;
          continue;
        }
        const uint64_t calibrated = std::min<uint64_t>(count, calibration_count);
        if (calibrated > 0 &&
            sccl::calibrateCompute(presetConfig(name, density), options.dtype, calibrated,
                                   options.iters, &per_element) != scclSuccess) {
          std::fprintf(stderr, "cost_projection: calibrating %s failed: %s\n", name.c_str(),
                       scclGetLastError(nullptr));
          return 1;
        }
        local[name] = per_element;
      }
      for (double r : ranks) {
        for (double g : gbits) {
          const sccl::LinkModel link{latency_us * 1e-6, g * 1e9 / 8};
          std::map<std::string, sccl::CallPrediction> predicted;
          for (const std::string& name : predicted_presets) {
            sccl::ResolvedSparseConfig c;
            if (sccl::resolveSparseConfig(presetConfig(name, density), &c) != scclSuccess) return 1;
            sccl::ShapeAssumptions assume;
            assume.gather_inflation = inflation;
            assume.union_factor = union_factor;
            const sccl::CallShape shape =
                sccl::predictCallShape(c, count, options.dtype, int(r), assume);
            predicted[name] =
                sccl::predictCall(c, shape, link,
                                  {local[name], ranks_per_machine, transport_shares_cores,
                                   entry_ns * 1e-9, transport_byte_ns * 1e-9,
                                   transport_message_us * 1e-6});
          }
          for (const std::string& name : presets) {
            const sccl::CallPrediction& p = predicted[name];
            table.addRow({double(count), density, name, r, g, p.seconds * 1e3,
                          p.comm_seconds * 1e3, p.compute_seconds * 1e3,
                          p.aggregate_seconds * 1e3, double(p.bytes.sent) / 1e6,
                          double(p.bytes.received) / 1e6, double(p.collectives),
                          double(p.messages), double(p.entries),
                          predicted["dense"].seconds / p.seconds},
                         stdout);
          }
        }
      }
    }
  }
  if (!options.json_path.empty()) {
    KeyValues all_options = settings;
    all_options.push_back({"densities", joined(options.densities)});
    if (!table.writeJson(options.json_path, "cost_projection", described, all_options)) return 1;
  }
  return 0;
}
