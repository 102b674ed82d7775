#!/usr/bin/env bash
# shardgnn set-up, one command on a fresh Debian 12 machine (as root, or with sudo):
#   1. installs every dependency from Debian packages (says which, skips what is there),
#   2. builds shardgnn in Release into build/,
#   3. runs the quickstart on the shipped default dataset: Cora converted, partitioned in two and
#      trained on 2 MPI ranks (it prints the test accuracy).
# Idempotent: run it again at any time. Options: --no-quickstart, --deps-only, --slurm-test (also
# Debian's SLURM daemons and munge, for the tests that bring up a private SLURM on localhost: for a
# test machine, never a cluster node with its own SLURM); --torch pip (build in build-torch/
# against PyTorch's libtorch from PyPI, torch==$SHARDGNN_TORCH_VERSION, default 2.11.0, CUDA 13,
# in the virtual environment build-torch/venv; needs a CUDA toolkit, $CUDA_HOME or
# /usr/local/cuda, to configure, not a GPU); --torch-python PY (the same against the torch of an
# existing Python, e.g. a cluster's PyTorch module).
set -euo pipefail
cd "$(dirname "$0")/.."

quickstart=1
build=1
slurm_test=0
torch=debian    # debian, pip or python
torch_python=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-quickstart) quickstart=0 ;;
    --deps-only) build=0; quickstart=0 ;;
    --slurm-test) slurm_test=1 ;;
    --torch)
      [ "${2:-}" = pip ] || { echo "setup.sh: --torch takes 'pip' (or use --torch-python PY)" >&2; exit 2; }
      torch=pip; shift ;;
    --torch-python)
      [ -n "${2:-}" ] || { echo "setup.sh: --torch-python needs a Python interpreter" >&2; exit 2; }
      torch=python; torch_python=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

# libopenblas0-pthread: without it libtorch falls back to the reference BLAS (~25x slower matmul).
# libdnnl2 (oneDNN): the layers' float32 CPU products, also under PyPI's libtorch (trainer/gemm.hpp).
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  zlib1g-dev
  libmetis-dev metis
  mpich libmpich-dev
  libtorch-dev libopenblas0-pthread libdnnl2
  catch2
  python3-numpy python3-pytest python3-dev pybind11-dev
)
# A virtual environment for PyPI's torch (Debian splits venv out of python3).
[ "$torch" = pip ] && packages+=(python3-venv)
if [ "$slurm_test" = 1 ]; then
  # shellcheck source=../tests/slurm/cluster.sh
  read -r -a slurm_packages <<< "$(source tests/slurm/cluster.sh && slurm_packages)"
  packages+=("${slurm_packages[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages already installed"
else
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install packages" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ $build -eq 1 ] || exit 0

bin=build
if [ "$torch" = debian ]; then
  echo "setup: building shardgnn (Release) in build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build -j"$(nproc)" shardgnn
else
  bin=build-torch
  if [ "$torch" = pip ]; then
    version=${SHARDGNN_TORCH_VERSION:-2.11.0}
    torch_python=build-torch/venv/bin/python
    [ -x "$torch_python" ] || /usr/bin/python3 -m venv build-torch/venv
    # Kept between runs: the wheel and its CUDA libraries are about 4.6 GB installed.
    if [ "$("$torch_python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" != "$version" ]; then
      echo "setup: installing torch==$version from PyPI into build-torch/venv"
      "$torch_python" -m pip install -q --disable-pip-version-check "torch==$version"
    fi
    # numpy: the Python module's test (python/shardgnn_model.py reads dataset folders with it);
    # torch_geometric and pytest: the Python package's batches in PyG (tests/python/test_pyg.py, a pytest module).
    "$torch_python" -c 'import numpy' 2>/dev/null || "$torch_python" -m pip install -q --disable-pip-version-check numpy
    "$torch_python" -c 'import torch_geometric' 2>/dev/null || "$torch_python" -m pip install -q --disable-pip-version-check torch_geometric
    "$torch_python" -c 'import pytest' 2>/dev/null || "$torch_python" -m pip install -q --disable-pip-version-check pytest
  fi
  prefix=$("$torch_python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) ||
    { echo "setup: $torch_python has no torch (import torch failed)" >&2; exit 1; }
  cuda_home=${CUDA_HOME:-/usr/local/cuda}
  cuda=()
  if "$torch_python" -c 'import sys, torch; sys.exit(torch.version.cuda is None)' 2>/dev/null; then
    [ -x "$cuda_home/bin/nvcc" ] || { echo "setup: this torch was built with CUDA: its CMake files need a CUDA toolkit ($cuda_home/bin/nvcc not found; set CUDA_HOME)" >&2; exit 1; }
    cuda=(-DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" -DCUDAToolkit_ROOT="$cuda_home")
  fi
  # The interpreter itself, not what its symbolic link resolves to (a venv's python is a link to
  # the system's, which has no torch): for the Python module's test.
  case $torch_python in
    /*) torch_python_path=$torch_python ;;
    */*) torch_python_path=$PWD/$torch_python ;;
    *) torch_python_path=$(command -v "$torch_python") ;;
  esac
  echo "setup: building shardgnn (Release) in build-torch/ against $("$torch_python" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null)"
  cmake -S . -B build-torch -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DSHARDGNN_TORCH_PYTHON="$torch_python_path" "${cuda[@]}" >/dev/null
  ninja -C build-torch -j"$(nproc)" shardgnn
fi

[ $quickstart -eq 1 ] || exit 0

echo
echo "quickstart: convert Cora, partition it in two, train GraphSAGE on 2 MPI ranks"
q=$bin/quickstart
./$bin/tools/shardgnn data convert datasets/samples/cora.npz --out $q/cora --force
./$bin/tools/shardgnn data validate $q/cora
./$bin/tools/shardgnn partition $q/cora --parts 2 --method metis --balance nodes,train --out $q/cora-2 --force --verify
mpiexec -n 2 ./$bin/tools/shardgnn train $q/cora-2 --model sage --fanouts 10,10 --batch 64 --hidden 128 --epochs 20 --seed 0
