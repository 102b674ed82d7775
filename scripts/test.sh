#!/usr/bin/env bash
# shardgnn tests, one command: builds and runs the whole suite (Release), then the same tests
# under AddressSanitizer + UndefinedBehaviorSanitizer, then the code that reads models back
# (weights, cards, predict) under both with libtorch, then the trainer's tests built against
# PyPI's torch. Needs the packages of scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "test: Release build and suite (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDGNN_TESTS=ON >/dev/null
ninja -C build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "test: ASan + UBSan build and suite (build-asan/)"
# -O1 and line tables, as the sanitizers advise: it builds in half the time of -O2 -g and their
# reports keep file and line; assertions stay on.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DSHARDGNN_TESTS=ON \
      -DSHARDGNN_SANITIZE=ON -DSHARDGNN_WITH_TORCH=OFF >/dev/null
ninja -C build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"
# The code that reads models back (the weights and card readers, predict, a checkpoint's resume)
# under the same sanitizers, against Debian's libtorch (itself not instrumented; nothing of it
# needed suppressing): its own build of the tools and model_io, and the tests that exercise them.
echo "test: ASan + UBSan with libtorch: model reading, predict, declared models (build-asan-torch/)"
cmake -S . -B build-asan-torch -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DSHARDGNN_TESTS=ON \
      -DSHARDGNN_SANITIZE=ON -DSHARDGNN_WITH_TORCH=ON >/dev/null
ninja -C build-asan-torch -j"$jobs" shardgnn shardgnn-train shardgnn-predict model_io_tests
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan-torch --output-on-failure -j"$jobs" -R '^(model_io|cli_predict|cli_models)$'
# The trainer against PyPI's torch (CUDA 13 build, run on CPU), the libtorch GPU jobs use, so that
# an API or linking break shows before anyone holds a GPU. Its CMake files need a CUDA toolkit.
if [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  echo "test: PyPI torch build and the trainer's suite (build-torch/)"
  ./scripts/setup.sh --torch pip --no-quickstart
  ninja -C build-torch -j"$jobs"
  ctest --test-dir build-torch --output-on-failure -j"$jobs" -R '^(trainer_1|trainer_mpi_2|typed_train_2|cli_train|cli_predict|cli_models|model_io|python_model|python_pyg|python_examples|device_tests|device_tests_rehearsal)$'
else
  echo "test: no CUDA toolkit (${CUDA_HOME:-/usr/local/cuda}/bin/nvcc): the PyPI torch build is skipped"
fi
echo "test: all passed"
