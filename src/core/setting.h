// Environment settings. Every SCCL_* variable the library reads is declared exactly once with
// SCCL_PARAM_INT / SCCL_PARAM_STRING (name, default, help). The declaration registers it for
// `sccl_info`, and the generated accessor reads the environment once and caches the value.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sccl {

struct ParamInfo {
  std::string env_name;       // full variable name, e.g. "SCCL_TIMEOUT_MS"
  std::string default_value;  // as text
  std::string help;
  std::function<std::string()> current_value;  // value in effect, as text
};

// All declared settings, sorted by name.
std::vector<ParamInfo> registeredParams();

namespace detail {
struct ParamRegistrar {
  explicit ParamRegistrar(ParamInfo info);
};
int64_t readIntParam(const char* env_name, int64_t default_value);
std::string readStringParam(const char* env_name, const char* default_value);
}  // namespace detail

}  // namespace sccl

// Declares `int64_t sccl::param<Name>()` reading SCCL_<env>. Use once, in a .cc file, and declare
// the accessor in a header where other files need it.
#define SCCL_PARAM_INT(Name, env, default_value, help_text)                        \
  namespace sccl {                                                                 \
  int64_t param##Name() {                                                          \
    static const int64_t value = detail::readIntParam("SCCL_" env, default_value); \
    return value;                                                                  \
  }                                                                                \
  static detail::ParamRegistrar param_registrar_##Name(ParamInfo{                  \
      "SCCL_" env, std::to_string(default_value), help_text,                       \
      [] { return std::to_string(param##Name()); }});                              \
  }

#define SCCL_PARAM_STRING(Name, env, default_value, help_text)                            \
  namespace sccl {                                                                        \
  const std::string& param##Name() {                                                      \
    static const std::string value = detail::readStringParam("SCCL_" env, default_value); \
    return value;                                                                         \
  }                                                                                       \
  static detail::ParamRegistrar param_registrar_##Name(ParamInfo{                         \
      "SCCL_" env, default_value, help_text, [] { return param##Name(); }});              \
  }
