// The one reader of boolean keys in the JSON configs (sparse and event): true/false and the
// integers 0/1 are accepted alike, so that every boolean key takes the same forms whatever the
// C field behind it (docs/api.md).
#pragma once

#include <nlohmann/json.hpp>

namespace sccl {

// *flag = 1 or 0 and true for true/false/1/0 (1.0 and "true" are not booleans); false otherwise.
inline bool readJsonFlag(const nlohmann::json& value, int* flag) {
  if (value.is_boolean()) {
    *flag = value.get<bool>() ? 1 : 0;
    return true;
  }
  if (value.is_number_integer()) {
    // Signed or unsigned, JSON integers compare exactly with 0 and 1.
    if (value == 0 || value == 1) {
      *flag = value == 1 ? 1 : 0;
      return true;
    }
  }
  return false;
}

// What error messages call the accepted forms.
constexpr const char* kJsonFlagForms = "true, false, 1 or 0";

}  // namespace sccl
