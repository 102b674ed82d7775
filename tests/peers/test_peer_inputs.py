#!/usr/bin/env python3
"""Every benchmark peer's input stage (bench/peers/*.py --check-input: numpy only, no DGL) on small
folders of every dataset format version and width this project writes: Cora as this build writes
it (format 4: int32 ids and splits, int8 labels), rewritten as versions 1-3 and as a graph past
2^31 nodes stores it (int64 ids), with float16 and bfloat16 features, 200 classes (int16 labels),
Cora's edge split (link prediction) and a generated typed graph, each at several versions and
widths, and typed graphs with a relation id per edge (format 5), two relations between papers. Each peer must read each folder it applies to as the same arrays (same dtypes, shapes and
sums) and refuse, in one line naming the file, what it cannot read: a newer format version, a typed
graph where it trains one node type, label sets, a file that disagrees with meta.json. A build that
writes a new format version fails here until the peers read it.

    test_peer_inputs.py --shardgnn EXE --samples DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np

PEERS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
sys.path.insert(0, PEERS)
from dataset_input import InputError, VERSIONS, dgl_ready  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def sh(*argv):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, argv))} exited {r.returncode}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def peer(script, folder, *extra):
    """Runs a peer's input stage: (exit status, what it read or None, its stderr)."""
    r = subprocess.run([sys.executable, os.path.join(PEERS, script), folder, "--check-input", *extra], capture_output=True, text=True)
    read = json.loads(r.stdout) if r.returncode == 0 else None
    return r.returncode, read, r.stderr.strip()


def rewrite(src, dst, version=None, widen=(), meta_edit=None):
    """A copy of dataset folder `src` as another version wrote it: the arrays in `widen` stored as
    int64 (their meta.json entries and checksums to match), meta.json's version set."""
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "meta.json")) as f:
        meta = json.load(f)
    for name in widen:
        entry = meta["arrays"][name]
        path = os.path.join(dst, entry["file"])
        np.save(path, np.load(path).astype("<i8"))
        with open(path, "rb") as f:
            entry.update(dtype="<i8", crc32="%08x" % zlib.crc32(f.read()))
    if version is not None:
        meta["version"] = version
    if meta_edit:
        meta_edit(meta)
    with open(os.path.join(dst, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    return dst


def dtype_of(folder, name):
    with open(os.path.join(folder, "meta.json")) as f:
        return json.load(f)["arrays"][name]["dtype"]


def versions_of(base, work, tag, extra_ids=()):
    """`base` (this build's format) and its rewrites as versions 1-3 wrote them and as format 4
    stores a graph too big for int32 ids: {label: folder}."""
    splits = ["train_idx", "val_idx", "test_idx"]
    out = {f"{tag} v4": base}
    out[f"{tag} v4 int64 ids"] = rewrite(base, f"{work}/{tag}-v4-wide", widen=["indices", *splits, *extra_ids])
    out[f"{tag} v3"] = rewrite(base, f"{work}/{tag}-v3", 3, widen=splits)
    out[f"{tag} v2"] = rewrite(base, f"{work}/{tag}-v2", 2, widen=[*splits, "labels"])
    out[f"{tag} v1"] = rewrite(base, f"{work}/{tag}-v1", 1, widen=[*splits, "labels", "indices"])
    return out


def same_reads(peers, folders, reference, args=lambda script: ()):
    """Each peer reads each folder as it reads `reference`: the same arrays (the features of a
    2-byte folder as float32 within their rounding)."""
    for script in peers:
        rc, want, err = peer(script, folders[reference], *args(script))
        check(rc == 0, f"{script} reads {reference}" + ("" if rc == 0 else f": {err}"))
        if rc != 0:
            continue
        for label, folder in folders.items():
            if label == reference:
                continue
            rc, got, err = peer(script, folder, *args(script))
            if rc != 0:
                check(False, f"{script} reads {label}: {err}")
                continue
            diff = []
            for key in sorted(set(want) | set(got)):
                a, b = want.get(key), got.get(key)
                if "float16" in label or "bfloat16" in label:
                    if isinstance(a, dict) and a.get("dtype") == "<f4" and isinstance(b, dict):
                        # float16 keeps 11 significant bits and bfloat16 8: each value rounds by at
                        # most half a unit there (float16's subnormals by 2^-25 absolute), so the sums
                        # differ by at most that share of the magnitudes.
                        rel = 2.0 ** -8 if "bfloat16" in label else 2.0 ** -11
                        tol = rel * a["abs_sum"] + 2.0 ** -25 * np.prod(a["shape"])
                        if b["dtype"] != "<f4" or b["shape"] != a["shape"] or abs(b["sum"] - a["sum"]) > tol:
                            diff.append(key)
                        continue
                if a != b:
                    diff.append(key)
            check(not diff, f"{script} reads {label} as {reference}" + (f" (differs in {', '.join(diff)})" if diff else ""))


def refuses(script, folder, what, *needles, extra=()):
    rc, _, err = peer(script, folder, *extra)
    one_line = rc != 0 and err.count("\n") == 0
    check(one_line and all(n in err for n in needles), f"{script} refuses {what} in one line" + (f" (exit {rc}: {err!r})" if not one_line or not all(n in err for n in needles) else f": {err}"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardgnn", required=True)
    ap.add_argument("--samples", required=True)
    a = ap.parse_args()
    exe = a.shardgnn
    work = tempfile.mkdtemp(prefix="peer-inputs-")
    try:
        run(exe, a.samples, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("peer inputs: all passed")
    return 0


def run(exe, samples, work):
    node_peers = ["dgl_sampler.py", "dgl_train.py", "distdgl_train.py"]

    # The contract itself: an int32 id array or a float64 feature array is refused before DGL.
    for bad in ({"indices": np.zeros(3, np.int32)}, {"features": np.zeros((2, 2), np.float64)}):
        try:
            dgl_ready(bad)
            check(False, f"dgl_ready refuses {list(bad)[0]} of {next(iter(bad.values())).dtype}")
        except InputError as e:
            check(True, f"dgl_ready refuses {list(bad)[0]}: {e}")

    # Cora as this build writes it, as every earlier version wrote it, and with 2-byte features.
    cora = f"{work}/cora"
    sh(exe, "data", "convert", f"{samples}/cora.npz", "--out", cora)
    with open(f"{cora}/meta.json") as f:
        written = json.load(f)["version"]
    check(written in VERSIONS, f"this build writes format version {written}, which the peers read (they read {list(VERSIONS)})")
    check(dtype_of(cora, "indices") == "<i4" and dtype_of(cora, "labels") == "|i1", "Cora is written with int32 ids and int8 labels")
    folders = versions_of(cora, work, "cora")
    for dtype in ("float16", "bfloat16"):
        folders[f"cora v4 {dtype}"] = f"{work}/cora-{dtype}"
        sh(exe, "data", "convert", cora, "--feature-dtype", dtype, "--out", folders[f"cora v4 {dtype}"])
    folders["cora v1 float16"] = rewrite(folders["cora v4 float16"], f"{work}/cora-v1-f16", 1,
                                         widen=["train_idx", "val_idx", "test_idx", "labels", "indices"])
    for label, folder in folders.items():
        if label != "cora v4":
            out = subprocess.run([exe, "data", "validate", folder], capture_output=True, text=True)
            check(out.returncode == 0, f"shardgnn validates {label} (the rewrite is a folder it reads)" + ("" if out.returncode == 0 else f": {out.stdout[-300:]}{out.stderr[-300:]}"))
    same_reads(node_peers, folders, "cora v4")

    # 200 classes: labels stored as int16.
    many = f"{work}/classes200"
    sh(exe, "data", "generate", "sbm", "--nodes", "3000", "--classes", "200", "--feature-dim", "8", "--avg-degree", "6", "--out", many)
    check(dtype_of(many, "labels") == "<i2", "200 classes are written as int16 labels")
    same_reads(node_peers, versions_of(many, work, "classes200"), "classes200 v4")

    # Link prediction: Cora's edges split as Kipf and Welling's GAE split them.
    sym = f"{work}/cora-sym"
    sh(exe, "data", "convert", f"{samples}/cora.npz", "--symmetrize", "--drop-self-loops", "--drop-duplicates", "--out", sym)
    link = f"{work}/link"
    sh(exe, "data", "split-edges", sym, "--val", "0.05", "--test", "0.10", "--seed", "3", "--out", link)
    links = versions_of(link, work, "link")
    links["link v4 bfloat16"] = f"{work}/link-bf16"
    sh(exe, "data", "convert", link, "--feature-dtype", "bfloat16", "--out", links["link v4 bfloat16"])
    same_reads(["dgl_link.py", "dgl_sampler.py"], links, "link v4")

    # A typed graph: papers, authors, institutes, fields as the hetero generator writes them.
    het = f"{work}/hetero"
    sh(exe, "data", "generate", "hetero", "--papers", "800", "--out", het)
    typed = versions_of(het, work, "hetero")
    for dtype in ("float16", "bfloat16"):
        typed[f"hetero v4 {dtype}"] = f"{work}/hetero-{dtype}"
        sh(exe, "data", "convert", het, "--feature-dtype", dtype, "--out", typed[f"hetero v4 {dtype}"])
    same_reads(["dgl_rgat.py", "dgl_sampler.py"], typed, "hetero v4")

    # The same graph with each edge's relation stored (format 5, int8 ids, rows by relation first),
    # through the IGB-Het layout as a user's typed graph arrives.
    sh(exe, "data", "export", het, "--format", "igbh", "--out", f"{work}/het-igbh")
    ids = {"igbh v4": f"{work}/igbh-v4", "igbh v5 relation ids": f"{work}/igbh-v5"}
    sh(exe, "data", "convert", f"{work}/het-igbh", "--split", "random:0.6,0.2", "--out", ids["igbh v4"])
    sh(exe, "data", "convert", f"{work}/het-igbh", "--split", "random:0.6,0.2", "--relation-ids", "--out", ids["igbh v5 relation ids"])
    check(json.load(open(f"{work}/igbh-v5/meta.json"))["version"] == 5, "relation ids are written as format version 5")
    same_reads(["dgl_rgat.py", "dgl_sampler.py"], ids, "igbh v4")

    # Two relations between papers (cites, and a random "mentions"): the peer files each entry
    # under its stored relation, which the end types cannot tell, at either id width.
    os.makedirs(f"{work}/het-igbh/processed/paper__mentions__paper")
    np.save(f"{work}/het-igbh/processed/paper__mentions__paper/edge_index.npy", np.random.default_rng(5).integers(0, 800, size=(900, 2)))
    kg = f"{work}/kg"
    sh(exe, "data", "convert", f"{work}/het-igbh", "--split", "random:0.6,0.2", "--out", kg)
    kgs = {"kg v5": kg, "kg v5 int64 ids": rewrite(kg, f"{work}/kg-wide", widen=["indices", "edge_relations", "train_idx", "val_idx", "test_idx"])}
    same_reads(["dgl_rgat.py", "dgl_sampler.py"], kgs, "kg v5")
    rc, read, err = peer("dgl_rgat.py", kg)
    check(rc == 0 and "edges.paper__mentions__paper.src" in read and "edges.paper__cites__paper.src" in read, f"dgl_rgat reads two relations between papers ({err})")
    if rc == 0:
        meta = json.load(open(f"{kg}/meta.json"))
        indptr, indices, rel = np.load(f"{kg}/indptr.npy"), np.load(f"{kg}/indices.npy"), np.load(f"{kg}/edge_relations.npy")
        offsets = np.cumsum([0] + [t["count"] for t in meta["node_types"]])
        names = [t["name"] for t in meta["node_types"]]
        rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        for i, r in enumerate(meta["relations"]):
            key = f'{r["src"]}__{r["name"]}__{r["dst"]}'
            m = rel == i
            want = {"dtype": "<i8", "shape": [int(m.sum())], "sum": int((indices[m] - offsets[names.index(r["dst"])]).sum())}
            got = read.get(f"edges.{key}.src")
            check(got == want, f"dgl_rgat's {key} is edge_relations.npy's relation {i} ({got} vs {want})")

    # What a peer cannot read is refused in one line that names the file.
    future = rewrite(cora, f"{work}/cora-v{VERSIONS[-1] + 1}", VERSIONS[-1] + 1)
    for script in node_peers:
        refuses(script, future, f"format version {VERSIONS[-1] + 1}", "meta.json", f"key 'version' is {VERSIONS[-1] + 1}")
    refuses("dgl_link.py", rewrite(link, f"{work}/link-v{VERSIONS[-1] + 1}", VERSIONS[-1] + 1), "a newer version", "key 'version'")
    refuses("dgl_rgat.py", rewrite(het, f"{work}/hetero-v{VERSIONS[-1] + 1}", VERSIONS[-1] + 1), "a newer version", "key 'version'")
    refuses("dgl_train.py", het, "a typed graph", "meta.json", "features per node type")
    refuses("dgl_rgat.py", cora, "a graph of one node type", "meta.json", "not a typed graph")
    refuses("dgl_link.py", cora, "a graph without an edge split", "meta.json", "no edge_split")
    def misfiled(m):
        # A mentions entry (paper to paper) relabelled as a relation between other types.
        ids = np.load(f"{work}/kg-misfiled/edge_relations.npy")
        other = next(i for i, r in enumerate(m["relations"]) if (r["src"], r["dst"]) != ("paper", "paper"))
        ids[np.flatnonzero(ids == next(i for i, r in enumerate(m["relations"]) if r["name"] == "mentions"))[0]] = other
        np.save(f"{work}/kg-misfiled/edge_relations.npy", ids)
    refuses("dgl_rgat.py", rewrite(kg, f"{work}/kg-misfiled", meta_edit=misfiled), "a relation id whose end types disagree", "edge_relations.npy", "but the entry joins")
    refuses("dgl_rgat.py", rewrite(kg, f"{work}/kg-v4", 4), "relation ids in a version 4 folder", "meta.json", "relation_ids: true in a version 4 folder")

    # Label sets (GraphSAINT's layout, a multi-label class map): this peer trains one class a node.
    saint = f"{work}/saint"
    os.makedirs(saint)
    n = 30
    rows = [sorted({(v + 1) % n, (v - 1) % n, (v + 5) % n, (v - 5) % n}) for v in range(n)]
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int32)
    indices = np.array([u for r in rows for u in r], dtype=np.int32)
    np.savez(f"{saint}/adj_full.npz", indices=indices, indptr=indptr, format=np.array(b"csr"), shape=np.array([n, n]),
             data=np.ones(len(indices), np.float32))
    np.save(f"{saint}/feats.npy", np.random.default_rng(0).standard_normal((n, 4)))
    json.dump({str(v): [v % 2, (v // 2) % 2, 1] for v in range(n)}, open(f"{saint}/class_map.json", "w"))
    json.dump({"tr": list(range(0, 18)), "va": list(range(18, 24)), "te": list(range(24, 30))}, open(f"{saint}/role.json", "w"))
    sh(exe, "data", "convert", saint, "--out", f"{work}/ml")
    refuses("dgl_train.py", f"{work}/ml", "label sets", "meta.json", "multilabel")

    # A file that disagrees with meta.json's list (int64 ids listed as int32).
    liar = rewrite(cora, f"{work}/cora-liar", widen=["indices"], meta_edit=lambda m: m["arrays"]["indices"].update(dtype="<i4"))
    refuses("dgl_sampler.py", liar, "a file whose dtype meta.json misstates", "indices.npy", "dtype <i8, meta.json lists <i4")


if __name__ == "__main__":
    sys.exit(main())
