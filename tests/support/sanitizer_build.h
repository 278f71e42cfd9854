// Whether this test binary is built with a sanitizer (GCC defines __SANITIZE_*__, clang answers
// __has_feature). Tests that move much data against a deadline do less work there: an
// instrumented copy is about 10-20x slower, and the timing is not what they test.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SCCL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SCCL_TEST_SANITIZED 1
#endif
#endif

namespace sccl_test {
#ifdef SCCL_TEST_SANITIZED
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
}  // namespace sccl_test
