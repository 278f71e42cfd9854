#!/usr/bin/env bash
# Fails if libsparsecoll.so exports any dynamic symbol that is not sccl*.
set -euo pipefail
lib=$1
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
bad=$(echo "$exported" | grep -v '^sccl' | grep -v '^$' || true)
count=$(echo "$exported" | grep -c '^sccl' || true)
if [ -n "$bad" ]; then
  echo "symbols exported that are not sccl*:"; echo "$bad"; exit 1
fi
echo "$count sccl* symbols exported, nothing else"
[ "$count" -gt 10 ]
