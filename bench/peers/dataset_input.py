"""The peers' one reader of shardgnn dataset folders: numpy only (no DGL, no torch), so that the
suite can run every peer's input stage on every format version and width the project writes
(tests/peers/test_peer_inputs.py) without the peers' 5 GB environment.

A folder is read as its meta.json lists it: each array's file, dtype and shape are checked against
the list, ids of either width come back as int64, 2-byte features (float16 as `<f2`, bfloat16 as
`<u2`, float32's top half) come back as float32, labels of any width as int64. A folder of a
version these peers do not know, or one whose files disagree with its list, is refused with one
line naming the file. `dgl_ready` states what the peers then hand DGL and torch (int64 ids of one
type, float32 features) and is checked before either is imported. Benchmark-only.
"""
import json
import os

import numpy as np

FORMAT = "shardgnn-dataset"
# The dataset format versions the peers read (datasets/dataset.hpp's kDatasetFormatVersion is the
# newest): 2 stores ids as int32 where they fit, 3 labels in the narrowest type, 4 split ids as
# int32, 5 a relation id per edge (edge_relations, written only for a graph that stores them). A
# build that writes a newer version fails the peers' input test until they learn it.
VERSIONS = (1, 2, 3, 4, 5)


class InputError(Exception):
    """A folder the peers cannot read: the message is one line, the file first."""


def _fail(path, what):
    raise InputError(f"{path}: {what}")


class Dataset:
    """A dataset folder's meta.json and its arrays, read on demand (mapped, then converted)."""

    def __init__(self, folder):
        self.folder = folder
        self.meta_path = os.path.join(folder, "meta.json")
        if not os.path.isdir(folder):
            _fail(folder, "no such dataset folder")
        if not os.path.exists(self.meta_path):
            _fail(self.meta_path, "missing: not a shardgnn dataset folder")
        try:
            with open(self.meta_path) as f:
                meta = json.load(f)
        except ValueError as e:
            _fail(self.meta_path, f"not JSON ({e})")
        if not isinstance(meta, dict):
            _fail(self.meta_path, "expected a JSON object")
        self.meta = meta
        if meta.get("format") != FORMAT:
            _fail(self.meta_path, f"key 'format' is {meta.get('format')!r}, expected {FORMAT!r}")
        version = meta.get("version")
        if version not in VERSIONS:
            _fail(self.meta_path, f"key 'version' is {version!r}; the peers read versions {VERSIONS[0]} to {VERSIONS[-1]} "
                                  "(teach bench/peers/dataset_input.py the new one)")
        self.version = version
        self.n = self._count("num_nodes")
        self.m = self._count("num_edges")
        self.feature_dim = self._count("feature_dim")
        self.classes = self._count("num_classes")
        self.multilabel = bool(meta.get("multilabel", False))
        self.edge_split = "edge_split" in meta
        self.feature_dtype = meta.get("feature_dtype", "float32")
        if self.feature_dtype not in ("float32", "float16", "bfloat16"):
            _fail(self.meta_path, f"key 'feature_dtype' is {self.feature_dtype!r}, expected float32, float16 or bfloat16")
        self.node_types = meta.get("node_types", [])
        self.relations = meta.get("relations", [])
        self.relation_ids = bool(meta.get("relation_ids", False))
        if self.relation_ids and version < 5:
            _fail(self.meta_path, f"relation_ids: true in a version {version} folder, expected version 5 or later")
        self.arrays = meta.get("arrays")
        if not isinstance(self.arrays, dict):
            _fail(self.meta_path, "key 'arrays' missing or not an object")

    @property
    def typed(self):
        return bool(self.node_types)

    def _count(self, key):
        v = self.meta.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            _fail(self.meta_path, f"key '{key}' is {v!r}, expected a count")
        return v

    def has(self, name):
        return name in self.arrays

    def array(self, name, shape=None):
        """The listed array `name`, mapped, after checking its file against meta.json's entry (and
        against `shape` where the caller knows it; None in it is any length)."""
        entry = self.arrays.get(name)
        if not isinstance(entry, dict):
            _fail(self.meta_path, f"key 'arrays' lists no '{name}'")
        file = entry.get("file", "")
        if not isinstance(file, str) or not file or os.path.isabs(file) or ".." in file.split("/"):
            _fail(self.meta_path, f"arrays.{name}.file is {file!r}, expected a file name inside the folder")
        path = os.path.join(self.folder, file)
        try:
            a = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as e:
            _fail(path, f"cannot read it as .npy ({e})")
        if a.dtype.str != entry.get("dtype"):
            _fail(path, f"dtype {a.dtype.str}, meta.json lists {entry.get('dtype')}")
        if list(a.shape) != entry.get("shape"):
            _fail(path, f"shape {list(a.shape)}, meta.json lists {entry.get('shape')}")
        if shape is not None and (len(shape) != a.ndim or any(w is not None and w != s for w, s in zip(shape, a.shape))):
            _fail(path, f"shape {list(a.shape)}, expected {['any' if w is None else w for w in shape]}")
        return a

    def ints(self, name, shape, lo, hi, what):
        """An integer array as int64, each value checked to lie in [lo, hi)."""
        a = self.array(name, shape)
        if a.dtype.kind not in "iu":
            _fail(os.path.join(self.folder, self.arrays[name]["file"]), f"dtype {a.dtype.str}, expected integers")
        out = np.array(a, dtype=np.int64)  # a copy: torch wants writable arrays, and a mapped file is not
        if out.size and (out.min() < lo or out.max() >= hi):
            bad = int(np.flatnonzero((out.ravel() < lo) | (out.ravel() >= hi))[0])
            _fail(os.path.join(self.folder, self.arrays[name]["file"]),
                  f"element {bad} is {int(out.ravel()[bad])}, expected a {what} in [{lo}, {hi})")
        return out

    def csr(self):
        """(indptr, indices), both int64: row u's neighbours are indices[indptr[u]:indptr[u + 1]]."""
        indptr = self.ints("indptr", (self.n + 1,), 0, self.m + 1, "edge offset")
        path = os.path.join(self.folder, self.arrays["indptr"]["file"])
        if indptr[0] != 0 or indptr[-1] != self.m:
            _fail(path, f"runs from {indptr[0]} to {indptr[-1]}, expected 0 to num_edges {self.m}")
        if (np.diff(indptr) < 0).any():
            _fail(path, f"element {int(np.flatnonzero(np.diff(indptr) < 0)[0]) + 1} decreases")
        return indptr, self.ints("indices", (self.m,), 0, self.n, "node id")

    def edge_relations(self):
        """Each entry's relation (an index into `relations`) as int64, aligned with `indices`; a
        folder without relation ids has none (its relation is its end types')."""
        if not self.relation_ids:
            _fail(self.meta_path, "no relation_ids: each entry's relation is its end types'")
        return self.ints("edge_relations", (self.m,), 0, len(self.relations), "relation id")

    def _float32(self, name, rows, width):
        a = self.array(name, (rows, width))
        want = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2"}[self.feature_dtype]
        if a.dtype.str != want:
            _fail(os.path.join(self.folder, self.arrays[name]["file"]),
                  f"dtype {a.dtype.str}, expected {want} for feature_dtype {self.feature_dtype}")
        if self.feature_dtype == "bfloat16":
            # bfloat16 is float32's top 16 bits: shifted back into place it is that float32.
            return (np.array(a, dtype=np.uint32) << 16).view(np.float32)
        return np.array(a, dtype=np.float32)

    def features(self):
        """The [num_nodes, feature_dim] features as float32, whatever width they are stored in."""
        if self.typed:
            _fail(self.meta_path, "a typed graph keeps features per node type (features_<type>), not one 'features' array")
        if self.feature_dim == 0:
            _fail(self.meta_path, "feature_dim is 0: this peer needs node features")
        return self._float32("features", self.n, self.feature_dim)

    def type_features(self, node_type):
        """Node type `node_type`'s [count, feature_dim] features as float32."""
        return self._float32("features_" + node_type["name"], node_type["count"], node_type["feature_dim"])

    def labels(self):
        """One class per node as int64 (-1: unlabelled); a multi-label folder is refused."""
        if self.multilabel:
            _fail(self.meta_path, "multilabel: true (label sets in label_bits); this peer trains one class per node")
        if self.classes == 0:
            _fail(self.meta_path, "num_classes is 0: this peer needs labels")
        return self.ints("labels", (self.n,), -1, self.classes, "class (or -1)")

    def split(self, name):
        """A split's node ids (train_idx, val_idx, test_idx) as int64."""
        return self.ints(name, (None,), 0, self.n, "node id")

    def pairs(self, name):
        """Held-out node pairs of an edge split ([P, 2] rows) as int64."""
        if not self.edge_split:
            _fail(self.meta_path, "no edge_split: split the edges first (shardgnn data split-edges)")
        return self.ints(name, (None, 2), 0, self.n, "node id")

    def type_offsets(self):
        """A typed graph's first global id of each node type, and one past the last."""
        if not self.typed:
            _fail(self.meta_path, "not a typed graph (no node_types): this peer trains typed graphs")
        return np.cumsum([0] + [int(t["count"]) for t in self.node_types])


def dgl_ready(inputs):
    """Checks what a peer is about to hand DGL and torch, the contract they hold it to: ids and
    labels int64 (DGL's graph constructors want indptr and indices, or both ends of an edge, of
    one integer type, and ours are int64; torch indexes and takes labels as int64), features
    float32. Raises InputError naming the array otherwise."""
    for key, a in inputs.items():
        if isinstance(a, dict):
            dgl_ready({f"{key}.{k}": v for k, v in a.items()})
        elif isinstance(a, np.ndarray):
            want = np.float32 if a.dtype.kind == "f" else np.int64
            if a.dtype != want:
                raise InputError(f"input '{key}': {a.dtype}, DGL and torch are handed {np.dtype(want)}")
    return inputs


def describe(inputs):
    """What an input stage read, for --check-input: each array's dtype, shape and sum (floats
    summed in float64, and their magnitudes), so the same graph written by any version and width
    reads the same."""
    out = {}
    for key, a in inputs.items():
        if isinstance(a, dict):
            out.update(describe({f"{key}.{k}": v for k, v in a.items()}))
        elif isinstance(a, np.ndarray):
            if a.dtype.kind == "f":
                out[key] = {"dtype": a.dtype.str, "shape": list(a.shape), "sum": float(a.sum(dtype=np.float64)),
                            "abs_sum": float(np.abs(a).sum(dtype=np.float64))}
            else:
                out[key] = {"dtype": a.dtype.str, "shape": list(a.shape), "sum": int(a.sum(dtype=np.int64))}
        else:
            out[key] = a
    return out


def check_input_main(peer, read):
    """The --check-input mode and the real runs' first step alike: read() the input stage; on bad
    input print '<peer>: <file>: <what>' and exit 1. Returns what read() returned, checked."""
    try:
        return dgl_ready(read())
    except InputError as e:
        raise SystemExit(f"{peer}: {e}")


def print_described(inputs):
    print(json.dumps(describe(inputs), sort_keys=True))
