#include "core/handle_registry.h"

#include <mutex>
#include <unordered_set>

namespace sccl {
namespace {
struct Registry {
  std::mutex mutex;
  std::unordered_set<const void*> live;
};
// Never destroyed: API calls from other threads' destructors at exit must still find it.
Registry& registry() {
  static Registry* instance = new Registry();
  return *instance;
}
}  // namespace

void registerHandle(const void* handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live.insert(handle);
}

bool unregisterHandle(const void* handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.erase(handle) == 1;
}

bool isLiveHandle(const void* handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.live.count(handle) == 1;
}

}  // namespace sccl
