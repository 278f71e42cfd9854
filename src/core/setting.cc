#include "core/setting.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace sccl {
namespace {
std::mutex& registryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<ParamInfo>& registry() {
  static std::vector<ParamInfo> params;
  return params;
}
}  // namespace

namespace detail {
ParamRegistrar::ParamRegistrar(ParamInfo info) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().push_back(std::move(info));
}

int64_t readIntParam(const char* env_name, int64_t default_value) {
  const char* text = std::getenv(env_name);
  if (text == nullptr || *text == '\0') return default_value;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0') {
    // The logger itself reads settings, so report straight to stderr rather than through it.
    std::fprintf(stderr, "sparsecoll: ignoring %s=\"%s\" (not an integer), using %lld\n", env_name,
                 text, static_cast<long long>(default_value));
    return default_value;
  }
  return value;
}

std::string readStringParam(const char* env_name, const char* default_value) {
  const char* text = std::getenv(env_name);
  return (text == nullptr) ? std::string(default_value) : std::string(text);
}
}  // namespace detail

std::vector<ParamInfo> registeredParams() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<ParamInfo> params = registry();
  std::sort(params.begin(), params.end(),
            [](const ParamInfo& a, const ParamInfo& b) { return a.env_name < b.env_name; });
  return params;
}

}  // namespace sccl
