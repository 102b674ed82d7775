#!/usr/bin/env bash
# Benchmark peers (never a runtime dependency): a Python virtual environment under build/ with
# DGL and the PyTorch it supports, from PyPI. dgl 2.1.0 is the newest Linux wheel for CPython
# 3.11 on PyPI and supports torch up to 2.2.1 (see ../shared/PEERS.md). About 5 GB (PyPI's torch
# wheel pulls the CUDA libraries; it runs on CPU).
# Prints the venv's python, to pass as `shardgnn bench sampler --dgl-python`.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/peers-venv
if [ ! -x "$venv/bin/python" ]; then
  echo "peers: creating $venv" >&2
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import dgl' >/dev/null 2>&1; then
  echo "peers: installing dgl 2.1.0, torch 2.2.1 (+ torchdata 0.7.1, numpy<2, pydantic, pyyaml, pandas)" >&2
  "$venv/bin/pip" install -q --upgrade pip >&2
  "$venv/bin/pip" install -q "dgl==2.1.0" "torch==2.2.1" "torchdata==0.7.1" "numpy<2" pydantic pyyaml pandas >&2
fi
echo "$PWD/$venv/bin/python"
