#include "core/handle_registry.h"

#include <mutex>
#include <unordered_map>

namespace sccl {
namespace {
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, uint64_t> live;  // handle -> kind
};
// Never destroyed: API calls from other threads' destructors at exit must still find it.
Registry& registry() {
  static Registry* instance = new Registry();
  return *instance;
}
}  // namespace

void registerHandle(const void* handle, uint64_t kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[handle] = kind;
}

bool unregisterHandle(const void* handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.erase(handle) == 1;
}

bool isLiveHandle(const void* handle, uint64_t kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.live.find(handle);
  return found != r.live.end() && found->second == kind;
}

}  // namespace sccl
