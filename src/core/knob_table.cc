#include "core/knob_table.h"

#include <cstdio>

namespace sccl {
namespace {

bool lowerOpen(KnobBounds b) {
  return b == KnobBounds::OpenBelow || b == KnobBounds::Open;
}
bool upperOpen(KnobBounds b) {
  return b == KnobBounds::OpenAbove || b == KnobBounds::Open;
}

// A bound no value reaches: the end of the type, so the range text leaves it out.
bool unboundedBelow(const KnobDescriptor& k) {
  return k.lowest <= -DBL_MAX || (k.integer && k.lowest <= double(INT_MIN));
}
bool unboundedAbove(const KnobDescriptor& k) {
  return k.highest >= DBL_MAX || (k.integer && k.highest >= double(INT_MAX));
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

}  // namespace

bool knobInRange(const KnobDescriptor& k, double value) {
  if (std::isnan(value)) return false;
  if (k.integer && value != std::floor(value)) return false;
  const bool above_lowest = lowerOpen(k.bounds) ? value > k.lowest : value >= k.lowest;
  const bool below_highest = upperOpen(k.bounds) ? value < k.highest : value <= k.highest;
  return above_lowest && below_highest;
}

std::string knobRangeText(const KnobDescriptor& k) {
  const bool below = unboundedBelow(k), above = unboundedAbove(k);
  if (below && above) {
    return k.highest == INFINITY && !upperOpen(k.bounds) ? "a number (not NaN or -inf)"
                                                         : "a finite number";
  }
  if (above) return (lowerOpen(k.bounds) ? "> " : ">= ") + number(k.lowest);
  if (below) return (upperOpen(k.bounds) ? "< " : "<= ") + number(k.highest);
  return std::string("in ") + (lowerOpen(k.bounds) ? "(" : "[") + number(k.lowest) + ", " +
         number(k.highest) + (upperOpen(k.bounds) ? ")" : "]");
}

scclResult_t checkKnob(const KnobDescriptor& k, double value, const char* name,
                       const char* prefix) {
  if (knobInRange(k, value)) return scclSuccess;
  return fail(scclInvalidArgument, "%s%s %s must be %s%s", prefix, name, number(value).c_str(),
              k.integer ? "an integer " : "", knobRangeText(k).c_str());
}

scclResult_t checkKnobValues(const std::vector<KnobDescriptor>& table,
                             const std::vector<double>& values, const char* prefix) {
  for (size_t i = 0; i < table.size() && i < values.size(); ++i) {
    SCCL_CHECK(checkKnob(table[i], values[i], table[i].key, prefix));
  }
  return scclSuccess;
}

}  // namespace sccl
