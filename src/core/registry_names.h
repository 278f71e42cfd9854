// Lookups over the registries of presets and axes (tables of entries with a `name`), shared by
// the config checks and the JSON parser so that every "unknown name" error lists the valid ones.
#pragma once

#include <string>

namespace sccl {

template <typename Registry>
bool registryHas(const Registry& registry, const std::string& name) {
  for (const auto& entry : registry) {
    if (name == entry.name) return true;
  }
  return false;
}

// "a, b, c" in registry order.
template <typename Registry>
std::string registryNames(const Registry& registry) {
  std::string names;
  for (const auto& entry : registry) names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

}  // namespace sccl
