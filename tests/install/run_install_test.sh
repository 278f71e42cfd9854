#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs a separate project against
# it twice: through find_package(sparsecoll) and through pkg-config.
set -euo pipefail
build_dir=$1; work=$2; cmake_bin=${3:-cmake}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
prefix=$work/prefix
"$cmake_bin" --install "$build_dir" --prefix "$prefix" > "$work/install.log"
test -f "$prefix/include/sparsecoll/sparsecoll.h"
ls "$prefix"/lib*/libsparsecoll.so* > /dev/null

echo "== find_package(sparsecoll)"
"$cmake_bin" -S "$here/consumer" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/consumer-configure.log"
"$cmake_bin" --build "$work/consumer-build" > "$work/consumer-build.log"
"$work/consumer-build/consumer"

echo "== pkg-config sparsecoll"
pc_dir=$(dirname "$(ls "$prefix"/lib*/pkgconfig/sparsecoll.pc)")
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs sparsecoll)
libdir=$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=libdir sparsecoll)
cc "$here/consumer/consumer.c" $flags -o "$work/consumer-pkgconfig"
LD_LIBRARY_PATH=$libdir "$work/consumer-pkgconfig"
# The README's rule for a prefix outside the loader's path: without an rpath the binary cannot
# find libsparsecoll.so.0 at run time; with -Wl,-rpath from pkg-config's libdir it can.
if env -u LD_LIBRARY_PATH "$work/consumer-pkgconfig" > /dev/null 2>&1; then
  echo "expected the pkg-config binary without rpath to miss libsparsecoll.so.0 at run time" >&2
  exit 1
fi
cc "$here/consumer/consumer.c" $flags -Wl,-rpath,"$libdir" -o "$work/consumer-pkgconfig-rpath"
env -u LD_LIBRARY_PATH "$work/consumer-pkgconfig-rpath"
