#!/usr/bin/env bash
# The GPU check, in two halves.
#
#   scripts/device_check.sh prepare   (here: a build machine with Debian 12, network and a CUDA toolkit)
#     builds against PyPI's torch (scripts/setup.sh --torch pip, the wheel the GPU machine has) and
#     packs build-device/: the programs, the device and trainer tests, and the .deb files of the
#     Debian libraries they need (METIS, MPICH, Boost, UCX, hwloc, oneDNN), downloaded, not installed.
#   scripts/device_check.sh run       (there: a machine with a GPU and a python3 holding that torch)
#     unpacks the .deb files into a prefix under /tmp (never into /), takes libtorch and CUDA's
#     libraries from the python's torch, and runs, writing to $OUT (default ./device-check-out):
#       1. the device tests (layers, staging, dropout, a Cora run, checkpoints across devices),
#       2. Cora on the CPU and on the GPU (2 ranks, the quickstart's model), test accuracy side by side;
#          then predict from both runs (embeddings compared), link prediction on Cora's edge split
#          and multi-label training on a block-model graph, each on both devices,
#       3. bench train on a block-model graph the size of ogbn-products (~2.4M nodes, ~60M
#          undirected edges, 100 features; fanouts 15,10,5, batch 1024) on the CPU and on the GPU,
#          with nvidia-smi dmon sampling the GPU's use beside the GPU runs.
#     Sized to finish in under 9 minutes on one H200 with 16 cores. Nothing needs network there.
#
# The run half rehearses on a machine without a GPU: DEVICE_CHECK_DEVICE=cpu puts the CPU where the
# GPU would be (the device tests then compare the CPU with itself), and DEVICE_CHECK_NODES,
# DEVICE_CHECK_CPU_RANKS and DEVICE_CHECK_GPU_RANKS shrink the benchmark. DEVICE_CHECK_PYTHON
# names the python whose torch to use (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
kit=build-device

prepare() {
  ./scripts/setup.sh --torch pip --no-quickstart
  ninja -C build-torch shardgnn shardgnn-train shardgnn-predict shardgnn-bench device_tests trainer_tests
  rm -rf "$kit"
  mkdir -p "$kit/bin" "$kit/debs"
  cp build-torch/tools/shardgnn build-torch/tools/shardgnn-train build-torch/tools/shardgnn-predict build-torch/tools/shardgnn-bench \
    build-torch/tests/device_tests build-torch/tests/trainer_tests "$kit/bin/"
  strip --strip-unneeded "$kit"/bin/*
  # The runtime packages of the programs' Debian libraries (and mpiexec, whose Hydra links
  # libslurm), by name: their versions are the ones this build linked against.
  (cd "$kit/debs" && apt-get download -q -o APT::Sandbox::User="$(id -un)" \
    libmetis5 mpich libmpich12 libslurm38 libhwloc15 libucx0 libnuma1 libudev1 libboost-json1.81.0 libboost-program-options1.81.0 \
    libboost-container1.81.0 libdnnl2 ocl-icd-libopencl1 >/dev/null)
  du -sh "$kit"
  echo "device_check: $kit/ is ready; on the GPU machine, carrying $kit: scripts/device_check.sh run"
}

run() {
  local out=${OUT:-$PWD/device-check-out} device=${DEVICE_CHECK_DEVICE:-cuda} py=${DEVICE_CHECK_PYTHON:-python3}
  local nodes=${DEVICE_CHECK_NODES:-2400000} cpu_ranks=${DEVICE_CHECK_CPU_RANKS:-16} gpu_ranks=${DEVICE_CHECK_GPU_RANKS:-1,16}
  [ -d "$kit/bin" ] || { echo "device_check: no $kit/bin: run 'scripts/device_check.sh prepare' where the project builds, and carry $kit" >&2; exit 1; }
  mkdir -p "$out"
  local prefix=/tmp/shardgnn-device-prefix
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for deb in "$kit"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
  # Debian names mpiexec through its alternatives, which unpacking does not set up.
  ln -sf mpiexec.hydra "$prefix/usr/bin/mpiexec"
  # libtorch and the nvidia-* libraries beside it, from the python's torch; then the unpacked ones.
  local torch_lib
  torch_lib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  local libs=$torch_lib
  for d in "$torch_lib"/../../nvidia/*/lib; do [ -d "$d" ] && libs+=":$d"; done
  libs+=":$prefix/usr/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$prefix/usr/bin:$PATH"
  # One node, no network: MPICH's shared memory between the ranks, UCX on loopback only.
  export UCX_TLS=self,sm,tcp UCX_NET_DEVICES=lo HYDRA_IFACE=lo
  local bin=$PWD/$kit/bin log=$out/check.log
  : > "$log"
  say() { echo "== $*" | tee -a "$log"; }
  step() {  # step NAME CMD...: runs CMD, its output in the log, and never stops the check
    local t0=$SECONDS rc=0
    say "$1"
    shift
    "$@" >> "$log" 2>&1 || rc=$?
    say "  exit $rc, $((SECONDS - t0)) s"
  }
  {
    date -u
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core)'
    command -v nvidia-smi >/dev/null && nvidia-smi -L
    "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'
    ldd "$bin/shardgnn-train" | grep -E 'not found|torch_cuda|nccl|dnnl' || true
  } >> "$log" 2>&1

  # 1. The device tests: skipped (77) without a GPU, so a rehearsal runs them on the CPU.
  if [ "$device" = cpu ]; then
    step "device tests (rehearsal: the CPU as the device)" env SHARDGNN_TEST_DEVICE=cpu OMP_NUM_THREADS=1 "$bin/device_tests"
  else
    step "device tests" env OMP_NUM_THREADS=1 "$bin/device_tests"
  fi

  # 2. Cora, 2 ranks, on each device.
  local work=/tmp/shardgnn-device-check
  rm -rf "$work"
  mkdir -p "$work"
  step "Cora: convert and partition" sh -c "'$bin/shardgnn' data convert datasets/samples/cora.npz --out '$work/cora' --force &&
    '$bin/shardgnn' partition '$work/cora' --parts 2 --method metis --balance nodes,train --out '$work/cora-2' --force"
  # The runs' folders by their place in the pair, so that a rehearsal (the CPU twice) keeps both.
  local devs=(cpu "$device") tags=(host dev)
  for i in 0 1; do
    step "Cora on ${devs[$i]}" mpiexec -n 2 "$bin/shardgnn" train "$work/cora-2" --model sage --fanouts 10,10 --batch 64 --hidden 128 --epochs 20 \
      --device "${devs[$i]}" --run-dir "$work/run-${tags[$i]}"
  done
  { grep -E '^(training|test accuracy|epoch 20/)' "$log" || true; } | tail -8 | sed 's/^/  /' | tee -a "$log"

  # 2b. The other tasks on each device, 2 ranks: predict from the Cora runs (embeddings compared),
  # link prediction on Cora's edge split (GAE's GCN) and multi-label node classification.
  for i in 0 1; do
    step "predict on ${devs[$i]}" mpiexec -n 2 "$bin/shardgnn" predict "$work/run-${tags[$i]}" "$work/cora-2" --device "${devs[$i]}" --out "$work/pred-${tags[$i]}"
  done
  step "predict: $device against cpu" "$py" -c "import numpy as np, sys; a, b = (np.load(sys.argv[i] + '/embeddings.npy') for i in (1, 2));
p, q = (np.load(sys.argv[i] + '/predictions.npy') for i in (1, 2)); print('predict: embeddings max |cpu - device| %.2e, predictions equal %.4f' % (abs(a - b).max(), (p == q).mean()))" "$work/pred-host" "$work/pred-dev"
  # float16 features on the device: the batches widen them on the CPU, full inference on the GPU.
  step "Cora: a float16 partition" "$bin/shardgnn" partition "$work/cora" --parts 2 --method metis --balance nodes,train --feature-dtype float16 --out "$work/cora-2h"
  step "Cora float16 on $device" mpiexec -n 2 "$bin/shardgnn" train "$work/cora-2h" --model sage --fanouts 10,10 --batch 64 --hidden 128 --epochs 20 --device "$device"
  step "link: convert, split and partition Cora" sh -c "'$bin/shardgnn' data convert datasets/samples/cora.npz --symmetrize --drop-self-loops --drop-duplicates --normalize-features row --out '$work/cora-sym' &&
    '$bin/shardgnn' data split-edges '$work/cora-sym' --seed 0 --eval-negatives 100 --out '$work/cora-link' &&
    '$bin/shardgnn' partition '$work/cora-link' --parts 2 --method metis --out '$work/cora-link-2'"
  for d in cpu "$device"; do
    step "link on $d" mpiexec -n 2 "$bin/shardgnn" train "$work/cora-link-2" --task link --model gcn --fanouts -1,-1 --hidden 32 --embedding-dim 16 --batch 256 \
      --epochs 50 --lr 0.01 --dropout 0 --weight-decay 0 --device "$d"
  done
  step "multi-label: generate and partition" sh -c "'$bin/shardgnn' data generate sbm --nodes 50000 --classes 10 --multilabel 24 --labels-per-node 3 --separation 0.25 --out '$work/ml' &&
    '$bin/shardgnn' partition '$work/ml' --parts 2 --method metis --out '$work/ml-2'"
  for d in cpu "$device"; do
    step "multi-label on $d" mpiexec -n 2 "$bin/shardgnn" train "$work/ml-2" --model sage --fanouts 10,10 --hidden 128 --batch 512 --epochs 3 --device "$d"
  done
  { grep -E '^(predict:|test (accuracy|AUC|micro-F1)|== (predict|link|multi-label|Cora float16) on)' "$log" || true; } | sed 's/^/  /' | tee -a "$log"

  # 3. bench train at the size of ogbn-products: the CPU, then the GPU with dmon beside it.
  local common=(--nodes "$nodes" --avg-degree 50 --feature-dim 100 --classes 47 --method metis-ml --fanouts 15,10,5 --batch 1024
                --hidden 256 --epochs 2 --workdir "$work/bench")
  step "bench train, cpu, ranks $cpu_ranks" "$bin/shardgnn" bench train "${common[@]}" --ranks "$cpu_ranks" --json "$out/bench-cpu.json"
  local dmon=""
  if command -v nvidia-smi >/dev/null && [ "$device" != cpu ]; then
    nvidia-smi dmon -s um -d 1 -o T > "$out/dmon.txt" 2>&1 &
    dmon=$!
  fi
  step "bench train, $device, ranks $gpu_ranks" "$bin/shardgnn" bench train "${common[@]}" --ranks "$gpu_ranks" --device "$device" --json "$out/bench-gpu.json"
  if [ -n "$dmon" ]; then
    kill "$dmon" 2>/dev/null || true
    wait "$dmon" 2>/dev/null || true
    # The GPU's mean use over the seconds it was busy at all (dmon's sm column, %).
    awk '$1 !~ /^#/ && $3 ~ /^[0-9]+$/ { n++; s += $3; if ($3 > 0) { b++; bs += $3 } }
         END { if (n) printf "dmon: %d samples, sm mean %.1f%%, over busy samples %.1f%% (%d)\n", n, s / n, b ? bs / b : 0, b }' "$out/dmon.txt" | tee -a "$log"
  fi
  { grep -E '^(shardgnn|who) ' "$log" || true; } | sed 's/^/  /' | tee -a "$log"
  say "done in $SECONDS s; $out holds check.log, bench-cpu.json, bench-gpu.json${dmon:+, dmon.txt}"
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: scripts/device_check.sh prepare|run" >&2; exit 2 ;;
esac
