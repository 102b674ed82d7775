#!/usr/bin/env bash
# shardgnn set-up, one command on a fresh Debian 12 machine (as root, or with sudo):
#   1. installs every dependency from Debian packages (says which, skips what is there),
#   2. builds shardgnn in Release into build/,
#   3. runs the quickstart on the shipped default dataset: Cora converted, partitioned in two and
#      trained on 2 MPI ranks (it prints the test accuracy).
# Idempotent: run it again at any time. Options: --no-quickstart, --deps-only, --slurm-test (also
# Debian's SLURM daemons and munge, for the tests that bring up a private SLURM on localhost: for a
# test machine, never a cluster node with its own SLURM).
set -euo pipefail
cd "$(dirname "$0")/.."

quickstart=1
build=1
slurm_test=0
for arg in "$@"; do
  case "$arg" in
    --no-quickstart) quickstart=0 ;;
    --deps-only) build=0; quickstart=0 ;;
    --slurm-test) slurm_test=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

# libopenblas0-pthread: without it libtorch falls back to the reference BLAS (~25x slower matmul).
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  zlib1g-dev
  libmetis-dev metis
  mpich libmpich-dev
  libtorch-dev libopenblas0-pthread
  catch2
  python3-numpy
)
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

echo "setup: building shardgnn (Release) in build/"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build -j"$(nproc)" shardgnn

[ $quickstart -eq 1 ] || exit 0

echo
echo "quickstart: convert Cora, partition it in two, train GraphSAGE on 2 MPI ranks"
q=build/quickstart
./build/tools/shardgnn data convert datasets/samples/cora.npz --out $q/cora --force
./build/tools/shardgnn data validate $q/cora
./build/tools/shardgnn partition $q/cora --parts 2 --method metis --balance nodes,train --out $q/cora-2 --force --verify
mpiexec -n 2 ./build/tools/shardgnn train $q/cora-2 --model sage --fanouts 10,10 --batch 64 --hidden 128 --epochs 20 --seed 0
