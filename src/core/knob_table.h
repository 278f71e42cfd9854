// The numeric knobs of the sparse configuration, each described once.
//
// An axis (estimators/estimator_knobs.h, partition/search_knobs.h) lists its knobs in one X-macro,
//   X(type, key, field, lowest, highest, bounds, help)
// with `key` the JSON key and the member of the axis' knob struct, `field` the scclSparseConfig_t
// member, [lowest, highest] the range with `bounds` saying which ends are excluded, and a line of
// help. From that one list come the knob struct with its defaults (the public
// SCCL_SPARSE_CONFIG_INITIALIZER's values, never a second copy), the descriptor rows below, the
// copy out of a scclSparseConfig_t and the values for the range check and the fingerprint. The JSON
// reader, the config's validation, the axis factories and sccl_info read the rows, so a new knob
// is its public field plus one row.
#pragma once

#include <cfloat>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "sparsecoll/sparsecoll.h"

namespace sccl {

// The public defaults, as a constant a knob's default is read from.
inline constexpr scclSparseConfig_t kSparseConfigDefaults = SCCL_SPARSE_CONFIG_INITIALIZER;

// Which ends of [lowest, highest] a value may take.
enum class KnobBounds { Closed, OpenBelow, OpenAbove, Open };

struct KnobDescriptor {
  const char* key;    // JSON key and internal name, e.g. "sidco_first_ratio"
  const char* field;  // scclSparseConfig_t member, e.g. "sidcoFirstRatio"
  bool integer;       // an int field (JSON: an integer), else a double
  double lowest;
  double highest;
  KnobBounds bounds;
  const char* help;
  double (*read)(const scclSparseConfig_t&);
  // Only with a value knobInRange accepts: an integer knob's range lies inside int.
  void (*write)(scclSparseConfig_t&, double);

  double defaultValue() const { return read(kSparseConfigDefaults); }
};

// False for NaN, out of range, or a fraction for an integer knob.
bool knobInRange(const KnobDescriptor& knob, double value);

// The range in words: "in (0, 1)", "> 1", ">= 0", "a number (not NaN or -inf)".
std::string knobRangeText(const KnobDescriptor& knob);

// scclInvalidArgument "<prefix><name> <value> must be <range>" when knobInRange refuses.
scclResult_t checkKnob(const KnobDescriptor& knob, double value, const char* name,
                       const char* prefix = "");

// Checks `values` (the axis' knobValues, in table order) against `table`, naming each knob by its
// key after `prefix`.
scclResult_t checkKnobValues(const std::vector<KnobDescriptor>& table,
                             const std::vector<double>& values, const char* prefix);

// One axis' table (sparsifier/sparse_config.h lists them all).
struct KnobGroup {
  const char* axis;
  const std::vector<KnobDescriptor>* knobs;
};

// An axis' knob struct `Knobs` (SCCL_DECLARE_KNOB_AXIS in its header, SCCL_DEFINE_KNOB_AXIS in its
// source file) has: its descriptor rows in the X-macro's order; its values read from a public
// config; its values in the rows' order as doubles (range checks, the configuration's
// fingerprint; exact for the int fields).
template <typename Knobs>
const std::vector<KnobDescriptor>& knobTable();
template <typename Knobs>
Knobs knobsFrom(const scclSparseConfig_t& config);
template <typename Knobs>
std::vector<double> knobValues(const Knobs& knobs);

// checkKnobValues of an axis' knobs (Knobs given explicitly: a derived params struct passes).
template <typename Knobs>
scclResult_t checkKnobs(const Knobs& knobs, const char* prefix) {
  return checkKnobValues(knobTable<Knobs>(), knobValues<Knobs>(knobs), prefix);
}

}  // namespace sccl

// The pieces an axis' X-macro expands into (see the file comment).
#define SCCL_KNOB_MEMBER(type, key, field, ...) \
  type key = static_cast<type>(::sccl::kSparseConfigDefaults.field);

#define SCCL_KNOB_DESCRIPTOR(type, key, field, lowest, highest, bounds, help)   \
  ::sccl::KnobDescriptor{                                                       \
      #key,                                                                     \
      #field,                                                                   \
      std::is_integral_v<decltype(scclSparseConfig_t::field)>,                  \
      static_cast<double>(lowest),                                              \
      static_cast<double>(highest),                                             \
      ::sccl::KnobBounds::bounds,                                               \
      help,                                                                     \
      [](const scclSparseConfig_t& c) { return static_cast<double>(c.field); }, \
      [](scclSparseConfig_t& c, double v) { c.field = static_cast<decltype(c.field)>(v); }},

#define SCCL_KNOB_COPY(type, key, field, ...) knobs.key = static_cast<type>(config.field);

#define SCCL_KNOB_VALUE(type, key, ...) static_cast<double>(knobs.key),

// In the axis' header, inside namespace sccl: the struct and its three functions.
#define SCCL_DECLARE_KNOB_AXIS(Knobs, LIST)                 \
  struct Knobs {                                            \
    LIST(SCCL_KNOB_MEMBER)                                  \
  };                                                        \
  template <>                                               \
  const std::vector<KnobDescriptor>& knobTable<Knobs>();    \
  template <>                                               \
  Knobs knobsFrom<Knobs>(const scclSparseConfig_t& config); \
  template <>                                               \
  std::vector<double> knobValues<Knobs>(const Knobs& knobs);

// In the axis' source file, inside namespace sccl.
#define SCCL_DEFINE_KNOB_AXIS(Knobs, LIST)                                         \
  template <>                                                                      \
  const std::vector<KnobDescriptor>& knobTable<Knobs>() {                          \
    static const std::vector<KnobDescriptor> table = {LIST(SCCL_KNOB_DESCRIPTOR)}; \
    return table;                                                                  \
  }                                                                                \
  template <>                                                                      \
  Knobs knobsFrom<Knobs>(const scclSparseConfig_t& config) {                       \
    Knobs knobs;                                                                   \
    LIST(SCCL_KNOB_COPY)                                                           \
    return knobs;                                                                  \
  }                                                                                \
  template <>                                                                      \
  std::vector<double> knobValues<Knobs>(const Knobs& knobs) {                      \
    return {LIST(SCCL_KNOB_VALUE)};                                                \
  }
