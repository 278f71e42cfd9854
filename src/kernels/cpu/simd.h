// Intrinsics and target attributes for the vector paths of the CPU kernels. The library is built
// for baseline x86-64; functions marked with these attributes are compiled for AVX2 / AVX-512 and
// called only after isa.h has checked the processor.
#pragma once

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 headers (the `__Y = __Y`
// pass-through operand of unmasked intrinsics, GCC PR 105593); the warnings are located in the
// header, so silencing them around the include leaves our code's warnings intact.
// (Clang has no -Wmaybe-uninitialized and would warn about the unknown group.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#define SCCL_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#define SCCL_TARGET_AVX512 __attribute__((target("avx2,f16c,avx512f,avx512bw,avx512vl")))
