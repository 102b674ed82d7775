#!/usr/bin/env bash
# shardgnn tests, one command: builds and runs the whole suite (Release), then the same tests
# under AddressSanitizer + UndefinedBehaviorSanitizer. Needs the packages of scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "test: Release build and suite (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDGNN_TESTS=ON >/dev/null
ninja -C build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "test: ASan + UBSan build and suite (build-asan/)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDGNN_TESTS=ON \
      -DSHARDGNN_SANITIZE=ON -DSHARDGNN_WITH_TORCH=OFF >/dev/null
ninja -C build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"
echo "test: all passed"
