#!/usr/bin/env python3
"""Bounded mutation fuzzing of every reader and metadata file of shardgnn (see README.md here).

Seeds are the tiny inputs in tests/fixtures/fuzz/; the binary formats (dataset folder, 2-part
partition, run folder with a checkpoint) are derived from them with the binary under test at
start-up, so they always match the current formats. Then, round-robin over the formats until
--seconds have passed, one mutated copy of a format's base is made and the commands that read it
are run on it, each in a fresh folder, under a timeout and an address-space limit. Standard
library only: numpy must not be needed to run it.
"""
import argparse, gzip, hashlib, io, json, os, random, re, resource, shlex, shutil, signal
import struct, subprocess, sys, tempfile, time, zipfile, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.normpath(os.path.join(HERE, "..", "fixtures", "fuzz"))
FORMATS = ["edgelist", "edgelist-gz", "metis", "npz", "graphsaint", "dataset-npy", "dataset-meta",
           "partition-npy", "partition-meta", "checkpoint"]
# Mutated variants per round-robin cycle: cheap one-command formats get more, so that a 60 s run
# still reaches every format several times while the slow train runs do not starve the rest.
PER_CYCLE = {"edgelist": 6, "edgelist-gz": 6, "metis": 6, "npz": 6, "graphsaint": 4, "dataset-npy": 3,
             "dataset-meta": 3, "partition-npy": 3, "partition-meta": 3, "checkpoint": 1}
TRAIN_P = 0.3  # probability that a dataset/partition variant also gets a train run (1-2 s each)
TINY = ["--model", "sage", "--fanouts", "5,5", "--hidden", "8", "--batch", "16", "-q"]
FINE_RC = {0, 1, 2, 75}
# Sanitizers, std::terminate, abort() and glibc's heap checks. A bare "corrupted" would also match
# clean one-line errors ("PytorchStreamReader ... archive is corrupted"), so glibc's wording is used.
CRASH_MARKERS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "terminate called", "Aborted",
                 "free(): ", "malloc(): ", "double free or corruption", "corrupted size vs",
                 "corrupted double-linked", "stack smashing detected")

INTS = [0, -1, 1, 2**31 - 1, 2**31, -2**31, 2**32, 2**62, 2**63 - 1, -2**63]
FLOATS = [float("nan"), float("inf"), float("-inf"), 3.4e38, -3.4e38, -0.0, 1e-45]
TOKENS = ["0", "-1", "2147483647", "2147483648", "4294967296", "9223372036854775807",
          "9223372036854775808", "18446744073709551616", "99999999999999999999999", "1e5",
          "nan", "", "0x10", "+1", "1.5", "-0", "a"]
RAW = "\x00RAW:"  # marks a JSON value written verbatim (numbers json.dumps cannot write)
JSON_VALUES = [0, -1, 2**31, 2**63 - 1, 2**64, 1.7976931348623157e308, RAW + "1e999",
               RAW + "-1e999", RAW + "NaN", 0.5, True, None, "", "x", "/etc/passwd",
               "../../etc/passwd", "/dev/zero", "..", ".", "part-0/../..", [], {}, [0], "a" * 4096]


# ---------------------------------------------------------------- byte-level mutations
def mutate_bytes(rng, data):
    """Generic damage anything might suffer: flipped bits, overwritten bytes, cut or extended."""
    b = bytearray(data)
    op = rng.choice(["bitflip", "overwrite", "truncate", "append"] if b else ["append"])
    if op == "bitflip":
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif op == "overwrite":
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
    elif op == "truncate":
        del b[rng.randrange(len(b)):]
    else:
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return op, bytes(b)


def mutate_text(rng, data):
    """Token- and line-level edits that keep the text mostly parseable, so the parser's range
    checks (ids, counts, weights) are reached rather than only its syntax errors."""
    lines = data.decode("latin1").split("\n")
    op = rng.choice(["token", "token", "token", "header", "line-dup", "line-del", "line-junk"])
    if op in ("token", "header"):
        # "header": the first line that is not a comment (METIS n m fmt ncon)
        i = next((k for k, l in enumerate(lines) if l and l[0] not in "#%"), 0) if op == "header" \
            else rng.randrange(len(lines))
        toks = list(re.finditer(r"[^\s,]+", lines[i]))
        if toks:
            t = rng.choice(toks)
            new = rng.choice(TOKENS + (["1", "11", "111", "100", "10", "3"] if op == "header" else []))
            lines[i] = lines[i][:t.start()] + new + lines[i][t.end():]
            op += " %r->%r line %d" % (t.group(), new, i + 1)
    elif op == "line-dup":
        i = rng.randrange(len(lines))
        lines[i:i] = [lines[i]] * rng.randint(1, 50)
    elif op == "line-del":
        del lines[rng.randrange(len(lines))]
    else:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(
            ["1 2 3 4 5 6 7 8 9", "\x00", "1\r", "-5 -7", " ", "1,,2", "%" * 300, "7 " * 2000]))
    return op, "\n".join(lines).encode("latin1")


# ---------------------------------------------------------------- .npy mutations
def npy_parse(data):
    """(header text, data offset, descr) of a .npy file, or None when it does not look like one."""
    if data[:6] != b"\x93NUMPY" or len(data) < 12:
        return None
    start = 10 if data[6] == 1 else 12
    hlen = struct.unpack_from("<H" if data[6] == 1 else "<I", data, 8)[0]
    header = data[start:start + hlen].decode("latin1")
    m = re.search(r"'descr':\s*'([^']*)'", header)
    return header, start + hlen, m.group(1) if m else ""


def npy_build(header, payload, pad=True):
    header = header.rstrip("\n")
    if pad:  # numpy aligns the data to 64 bytes; readers that mmap may rely on it
        header += " " * (63 - (10 + len(header)) % 64)
    header += "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload


def mutate_npy(rng, data):
    parsed = npy_parse(data)
    op = rng.choice(["elem", "elem", "elem", "header", "header", "bytes"]) if parsed else "bytes"
    if op == "bytes":
        return mutate_bytes(rng, data)
    header, off, descr = parsed
    if op == "elem":
        # Plausible values in the data section: what the CRC check misses once it is fixed up and
        # only the content checks (ranges, monotone indptr, sorted rows, finite values) remain.
        code = {"<i8": "q", "<i4": "i", "<f4": "f", "<f8": "d"}.get(descr)
        size = struct.calcsize(code) if code else 0
        count = (len(data) - off) // size if size else 0
        if not count:
            return mutate_bytes(rng, data)
        b, what = bytearray(data), []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            i = rng.randrange(count)
            old = struct.unpack_from("<" + code, b, off + i * size)[0]
            if rng.random() < 0.2:  # swap with another element: breaks sortedness, keeps the set
                j = rng.randrange(count)
                other = struct.unpack_from("<" + code, b, off + j * size)[0]
                struct.pack_into("<" + code, b, off + j * size, old)
                new, what = other, what + ["swap %d,%d" % (i, j)]
            elif code in "fd":
                new = rng.choice(FLOATS)
                what.append("[%d]:=%r" % (i, new))
            else:
                new = rng.choice(INTS + [old + 1, old - 1, count, count + 1])
                new = max(min(new, 2**(8 * size - 1) - 1), -2**(8 * size - 1))
                what.append("[%d]:=%d" % (i, new))
            struct.pack_into("<" + code, b, off + i * size, new)
        return "elem " + " ".join(what), bytes(b)
    # header edits: shape, dtype, order, missing keys, version and length fields
    payload, kind = data[off:], rng.choice(["shape", "descr", "fortran", "drop-key", "version",
                                            "hlen", "unterminated"])
    if kind == "shape":
        dims = [int(d) for d in re.findall(r"-?\d+", re.search(r"'shape':\s*\(([^)]*)\)", header).group(1))]
        pick = rng.choice(["dim", "dim", "drop", "add"])
        if pick == "dim" and dims:
            dims[rng.randrange(len(dims))] = rng.choice(INTS + [d + 1 for d in dims] + [d - 1 for d in dims])
        elif pick == "drop" and dims:
            dims.pop()
        else:
            dims.append(rng.choice([0, 1, 2, 2**31]))
        shape = "(%s)" % (", ".join(map(str, dims)) + ("," if len(dims) == 1 else ""))
        header, kind = re.sub(r"'shape':\s*\([^)]*\)", "'shape': " + shape, header), "shape " + shape
    elif kind == "descr":
        d = rng.choice(["<i8", "<i4", "<u8", "<f4", "<f8", ">i8", ">f4", "|u1", "|b1", "<U4", "|O",
                        "<c16", "|V8", "<m8", "<i16", "zz"])
        header, kind = re.sub(r"'descr':\s*'[^']*'", "'descr': '%s'" % d, header), "descr " + d
    elif kind == "fortran":
        header = header.replace("False", "True")
    elif kind == "drop-key":
        key = rng.choice(["descr", "fortran_order", "shape"])
        header, kind = re.sub(r"'%s':\s*(\([^)]*\)|'[^']*'|\w+),?\s*" % key, "", header), "drop " + key
    elif kind == "version":
        v = rng.choice([0, 2, 3, 9, 255])
        return "header version %d" % v, data[:6] + bytes([v]) + data[7:]
    elif kind == "hlen":
        n = rng.choice([0, 1, 9, 0xFFFF, len(header) + 1, len(header) - 1])
        return "header length %d" % n, data[:8] + struct.pack("<H", n) + data[10:]
    else:
        header = header.replace("}", " ")
    return "header " + kind, npy_build(header, payload, pad=rng.random() < 0.8)


# ---------------------------------------------------------------- JSON mutations
def mutate_json(rng, data):
    """Replace one value (anywhere in the tree) by a hostile one, drop or rename a key."""
    if rng.random() < 0.15:
        return mutate_bytes(rng, data)
    obj = json.loads(data)
    paths, stack = [], [((), obj)]
    while stack:
        path, node = stack.pop()
        paths.append(path)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        stack += [(path + (k,), v) for k, v in items]
    path = rng.choice(paths[1:])
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    key, where = path[-1], "/".join(map(str, path))
    op = rng.choice(["value"] * 6 + ["drop", "rename"])
    if op == "value":
        parent[key] = rng.choice(JSON_VALUES)
        op = "set %s := %s" % (where, str(parent[key]).replace(RAW, "")[:40])
    elif op == "drop":
        del parent[key]
        op = "drop " + where
    elif isinstance(parent, dict):
        parent[key + "_x"] = parent.pop(key)
        op = "rename " + where
    else:
        parent.append(parent[key])
        op = "append-dup " + where
    text = json.dumps(obj, indent=2)
    text = re.sub(r'"\\u0000RAW:([^"]*)"', r"\1", text)
    return op, text.encode()


# ---------------------------------------------------------------- zip containers (npz, checkpoint)
def zip_patch(data, info, new):
    """Replace a stored member's bytes in place (same length) and fix its CRC-32 everywhere it is
    recorded (local header, data descriptor, central directory), so the zip layer accepts it and
    the member's own reader must cope. Keeps offsets and alignment, unlike rezipping."""
    b, crc = bytearray(data), zlib.crc32(new)
    fnl, exl = struct.unpack_from("<HH", b, info.header_offset + 26)
    start = info.header_offset + 30 + fnl + exl
    b[start:start + len(new)] = new
    struct.pack_into("<I", b, info.header_offset + 14, crc)
    if info.flag_bits & 8:  # data descriptor after the data, with or without its signature
        d = start + info.compress_size
        struct.pack_into("<I", b, d + 4 if b[d:d + 4] == b"PK\x07\x08" else d, crc)
    name = info.filename.encode()
    for m in re.finditer(re.escape(name), bytes(b)):
        c = m.start() - 46
        if c >= 0 and b[c:c + 4] == b"PK\x01\x02":
            struct.pack_into("<I", b, c + 16, crc)
    return bytes(b)


def mutate_npz(rng, data):
    if rng.random() < 0.3:  # the container itself: local headers, central directory, EOCD
        op, out = mutate_bytes(rng, data)
        return "zip " + op, out
    z = zipfile.ZipFile(io.BytesIO(data))
    members = [(i.filename, z.read(i)) for i in z.infolist()]
    k = rng.randrange(len(members))
    if rng.random() < 0.1:
        op = "drop member " + members.pop(k)[0]
    else:
        op, new = mutate_npy(rng, members[k][1])
        members[k], op = (members[k][0], new), "%s: %s" % (members[k][0], op)
    method = rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])  # both member encodings
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as out:
        for name, body in members:
            out.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), body, method)
    return op + (" (deflated)" if method else ""), buf.getvalue()


SEAL = re.compile(rb"shardgnn-crc32 [0-9a-f]{8}\Z")


def reseal(data):
    """Recompute the checkpoint's own CRC-32, as its writer would: the zip comment
    'shardgnn-crc32 XXXXXXXX' over the archive with an empty comment (trainer/checkpoint.cpp).
    Like the npy '+crc' variants, this gets damage past the checksum to torch's loader.
    None when the seal itself was damaged."""
    m = SEAL.search(data)
    if not m or m.start() < 2:
        return None
    bare = bytearray(data[:m.start()])
    bare[-2:] = b"\0\0"
    return data[:m.start()] + b"shardgnn-crc32 " + (b"%08x" % zlib.crc32(bare))


def mutate_checkpoint(rng, data):
    if rng.random() < 0.4:
        op, out = mutate_bytes(rng, data)
    else:
        z = zipfile.ZipFile(io.BytesIO(data))
        infos = [i for i in z.infolist() if i.compress_type == zipfile.ZIP_STORED and i.file_size]
        # the pickle holds the structure (names, shapes, options): most parsing happens there
        pkl = [i for i in infos if i.filename.endswith("data.pkl")]
        info = rng.choice(pkl if pkl and rng.random() < 0.6 else infos)
        body = bytearray(z.read(info))
        for _ in range(rng.randint(1, 3)):
            body[rng.randrange(len(body))] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        op, out = "%s: bytes +zipcrc" % info.filename, zip_patch(data, info, bytes(body))
    sealed = reseal(out) if rng.random() < 0.7 else None
    return (op + " +crc", sealed) if sealed else (op, out)


# ---------------------------------------------------------------- variants of each format
def fix_crc(meta_bytes, relpath, new_bytes, partition):
    """Record the mutated file's CRC-32 in meta.json / partition.json, as the writer would."""
    meta = json.loads(meta_bytes)
    name = os.path.basename(relpath)[:-4]
    arrays = meta["parts"][int(relpath.split("/")[0][5:])]["arrays"] if partition else meta["arrays"]
    if name in arrays:
        arrays[name]["crc32"] = "%08x" % zlib.crc32(new_bytes)
    return json.dumps(meta, indent=2).encode()


def npy_array(data):
    """(dtype char, itemsize, shape, values) of a little-endian numeric .npy, read without numpy."""
    header, offset, descr = npy_parse(data)
    shape = tuple(int(x) for x in re.search(r"'shape':\s*\(([^)]*)\)", header).group(1).replace(" ", "").split(",") if x)
    count = 1
    for d in shape:
        count *= d
    fmt = {"<i8": "q", "<i4": "i", "<f4": "f", "<f8": "d", "|u1": "B", "|b1": "?"}[descr]
    return fmt, shape, list(struct.unpack_from("<%d%s" % (count, fmt), data, offset))


def graphsaint_seed(npz_path, dest):
    """GraphSAINT's folder from the npz seed: its adjacency as scipy's CSR members, its features,
    a multi-label class map (each node's class and the next one) and its split as role.json."""
    z = zipfile.ZipFile(npz_path)
    get = lambda m: npy_array(z.read(m + ".npy"))
    _, shape, (n, _n) = get("adj_shape")
    os.makedirs(dest)
    with zipfile.ZipFile(os.path.join(dest, "adj_full.npz"), "w") as out:
        out.writestr("indptr.npy", z.read("adj_indptr.npy"))
        out.writestr("indices.npy", z.read("adj_indices.npy"))
        out.writestr("shape.npy", npy_build("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", struct.pack("<2q", n, n)))
        out.writestr("format.npy", npy_build("{'descr': '|S3', 'fortran_order': False, 'shape': (), }", b"csr"))
    _, _, (rows, cols) = get("attr_shape")
    fshape, feats = (rows, cols), [0.0] * (rows * cols)
    ptr, idx, val = get("attr_indptr")[2], get("attr_indices")[2], get("attr_data")[2]
    for r in range(rows):
        for e in range(ptr[r], ptr[r + 1]):
            feats[r * cols + idx[e]] += val[e]
    with open(os.path.join(dest, "feats.npy"), "wb") as f:
        f.write(npy_build("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % fshape, struct.pack("<%df" % len(feats), *feats)))
    labels = get("labels")[2]
    classes = max(labels) + 2
    rows = {str(v): [1 if c in (y, y + 1) else 0 for c in range(classes)] for v, y in enumerate(labels)}
    json.dump(rows, open(os.path.join(dest, "class_map.json"), "w"))
    split = lambda m: get(m)[2] if m + ".npy" in z.namelist() else []
    json.dump({"tr": split("idx_train"), "va": split("idx_val"), "te": split("idx_test")}, open(os.path.join(dest, "role.json"), "w"))
    return dest


def make_variant(fmt, rng, base):
    """(base path, {relative path: new bytes}, description) of one mutated input of fmt."""
    if fmt in ("edgelist", "metis", "npz"):
        src = base[fmt]
        data = open(src, "rb").read()
        if fmt == "npz":
            op, out = mutate_npz(rng, data)
        else:
            op, out = mutate_text(rng, data) if rng.random() < 0.6 else mutate_bytes(rng, data)
        return src, {"": out}, op
    if fmt == "graphsaint":  # one of the folder's four files
        src = base[fmt]
        rel = rng.choice(["adj_full.npz", "feats.npy", "class_map.json", "class_map.json", "role.json"])
        data = open(os.path.join(src, rel), "rb").read()
        mutate = mutate_npz if rel.endswith(".npz") else mutate_npy if rel.endswith(".npy") else mutate_json
        op, out = mutate(rng, data)
        return src, {rel: out}, "%s: %s" % (rel, op)
    if fmt == "edgelist-gz":
        src = base[fmt]
        data = open(src, "rb").read()
        if rng.random() < 0.4:  # the gzip stream (header, deflate blocks, trailer CRC and size)
            op, out = mutate_bytes(rng, data)
            return src, {"": out}, "gz " + op
        op, text = mutate_text(rng, gzip.decompress(data))
        return src, {"": gzip.compress(text, mtime=0)}, "content " + op
    if fmt in ("dataset-npy", "partition-npy"):
        part = fmt == "partition-npy"
        src = base["part"] if part else rng.choice([base["ds"], base["ds"], base["ds-metis"], base["ds-edgelist"], base["ds-ml"], base["ds-link"]])
        files = sorted(os.path.relpath(os.path.join(d, f), src) for d, _, fs in os.walk(src)
                       for f in fs if f.endswith(".npy"))
        rel = rng.choice(files)
        op, out = mutate_npy(rng, open(os.path.join(src, rel), "rb").read())
        changes, where = {rel: out}, "" if part else "[%s] " % os.path.basename(src)
        if rng.random() < 0.6:
            meta = "partition.json" if part else "meta.json"
            changes[meta] = fix_crc(open(os.path.join(src, meta), "rb").read(), rel, out, part)
            op += " +crc"
        return src, changes, "%s%s: %s" % (where, rel, op)
    if fmt in ("dataset-meta", "partition-meta"):
        part = fmt == "partition-meta"
        src = base["part"] if part else rng.choice([base["ds"], base["ds"], base["ds-metis"], base["ds-edgelist"], base["ds-ml"], base["ds-link"]])
        meta = "partition.json" if part else "meta.json"
        op, out = mutate_json(rng, open(os.path.join(src, meta), "rb").read())
        return src, {meta: out}, "%s%s: %s" % ("" if part else "[%s] " % os.path.basename(src), meta, op)
    src = base["run"]  # checkpoint
    op, out = mutate_checkpoint(rng, open(os.path.join(src, "checkpoint.pt"), "rb").read())
    return src, {"checkpoint.pt": out}, op if ": " in op else "checkpoint.pt: " + op


def commands(fmt, name, rng, args, base):
    """(label, argv) of each run on a variant, whose copy is ./NAME in the run's folder."""
    b = args.shardgnn
    if fmt in ("edgelist", "edgelist-gz", "metis", "npz", "graphsaint"):
        cmds = [("data convert", [b, "data", "convert", name, "--out", "out"])]
        if fmt.startswith("edgelist") or fmt in ("npz", "graphsaint"):  # the out-of-core path: files beside the output
            cmds.append(("data convert --memory-limit 1K", [b, "data", "convert", name, "--out", "out2",
                         "--symmetrize", "--drop-self-loops", "--drop-duplicates", "--memory-limit", "1K"]))
        return cmds
    train = rng.random() < TRAIN_P and not args.no_train  # drawn always: same variants either way
    if fmt.startswith("dataset"):
        # edge-list export reads node_ids.npy (only ds-edgelist has it); only ds has labels to train
        export = "edgelist" if name == "ds-edgelist" else "metis"
        cmds = [("data info", [b, "data", "info", name]),
                ("data validate", [b, "data", "validate", name]),
                ("partition", [b, "partition", name, "--parts", "2", "--out", "out"]),
                ("data export", [b, "data", "export", name, "--format", export, "--out", "out.txt"])]
        return cmds + ([("train", [b, "train", name, "--epochs", "1"] + TINY)] if train and name == "ds" else [])
    if fmt.startswith("partition"):
        cmds = [("partition verify", [b, "partition", "verify", name]),
                ("partition report", [b, "partition", "report", name])]
        mpi = [args.mpiexec, "-n", "2", b, "train", name, "--epochs", "1"] + TINY
        return cmds + ([("mpiexec train", mpi)] if train and not args.no_mpi else [])
    if args.no_train:
        return []
    return [("train --resume", [b, "train", base["ds"], "--run-dir", name, "--resume", "--epochs", "3"] + TINY)]


# ---------------------------------------------------------------- running and classifying
def run(argv, cwd, timeout, mem_mb, stderr_path):
    """Run argv in its own session; on timeout kill everything in that session (mpiexec's ranks
    included). Returns (rc or None on timeout, stderr text)."""
    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if mem_mb:  # a bogus count must not let one run take the machine's memory
            resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
    env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=os.path.join(cwd, "tmp"))
    os.makedirs(env["TMPDIR"], exist_ok=True)
    with open(stderr_path, "wb") as err:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=err, start_new_session=True, preexec_fn=limits)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        kill_tree(p.pid)  # also after a normal exit: no stray rank may outlive its launcher
        p.wait()
    with open(stderr_path, "rb") as f:
        return rc, f.read()[-65536:].decode("utf-8", "replace")


def kill_tree(root):
    """SIGKILL the session root leads and every descendant of root: MPICH's hydra proxies call
    setsid, so the session alone would miss the ranks they launched."""
    procs = {}
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            procs[int(d)] = (int(fields[1]), int(fields[3]))  # ppid, session
        except (ValueError, OSError, IndexError):
            pass
    doomed = {pid for pid, (_, sid) in procs.items() if sid == root} | {root}
    while True:
        more = {pid for pid, (ppid, _) in procs.items() if ppid in doomed} - doomed
        if not more:
            break
        doomed |= more
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def classify(rc, err, folder):
    """Failure kinds of one run (crash, hang, leftover) and notes (silent, odd status)."""
    kinds = []
    if rc is None:
        kinds.append("hang")
    elif rc < 0 or rc >= 126 or any(m in err for m in CRASH_MARKERS):
        kinds.append("crash")
    left = [os.path.relpath(os.path.join(d, n), folder) for d, ds, fs in os.walk(folder)
            for n in ds + fs if ".tmp-" in n or n.endswith(".old")]
    if left:
        kinds.append("leftover")
    notes = []
    if rc is not None and rc > 0 and not err.strip():  # a signal is already a crash
        notes.append("silent")
    if rc is not None and 0 <= rc < 126 and rc not in FINE_RC:
        notes.append("odd")
    return kinds, notes, left


def last_line(err):
    """stderr's last line, or a sanitizer's summary, which says more than its final 'ABORTING'."""
    lines = err.strip().splitlines() or [""]
    summary = [l for l in lines if l.startswith("SUMMARY: ") or "runtime error:" in l]
    return (summary[0] if summary else lines[-1])[:200]


def copy_in(src, dst, changes):
    if os.path.isdir(src):
        shutil.copytree(src, dst)
        for rel, data in changes.items():
            with open(os.path.join(dst, rel), "wb") as f:
                f.write(data)
    else:
        with open(dst, "wb") as f:
            f.write(changes[""])


def derive(args, seeds, dest, need_run):
    """Dataset folders, a 2-part partition and a run folder with a checkpoint, made by the
    binary under test from the committed seeds, so the binary formats are always current."""
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    b, base = args.shardgnn, {}
    for fmt, seed in [("edgelist", "tiny.edgelist"), ("edgelist-gz", "tiny.edgelist.gz"),
                      ("metis", "tiny.graph"), ("npz", "tiny.npz")]:
        base[fmt] = os.path.join(dest, seed)
        shutil.copy(os.path.join(seeds, seed), base[fmt])
    base["graphsaint"] = graphsaint_seed(base["npz"], os.path.join(dest, "graphsaint"))
    for key, argv in [("ds", [b, "data", "convert", base["npz"], "--out", "ds"]),
                      ("ds-metis", [b, "data", "convert", base["metis"], "--out", "ds-metis"]),
                      ("ds-edgelist", [b, "data", "convert", base["edgelist"], "--out", "ds-edgelist",
                                       "--symmetrize"]),
                      ("part", [b, "partition", "ds", "--parts", "2", "--out", "part"]),
                      ("ds-ml", [b, "data", "convert", "graphsaint", "--out", "ds-ml"]),
                      ("ds-link", [b, "data", "split-edges", "ds-edgelist", "--out", "ds-link", "--val", "0.1", "--test", "0.1",
                                   "--eval-negatives", "3"]),
                      ("run", [b, "train", "ds", "--epochs", "2", "--run-dir", "run"] + TINY)][:6 + need_run]:
        rc, err = run(argv, dest, 120, args.mem_mb, os.path.join(dest, "derive.err"))
        if rc != 0:
            print("fuzz: deriving %s failed (rc %s): %s\n%s" % (key, rc, " ".join(argv), err), file=sys.stderr)
            sys.exit(2)
        base[key] = os.path.join(dest, key)
    return base


def keep_case(keep, case_dir, tag, row, argv, name, mem_mb):
    """KEEP/TAG/input/ (the mutated input) and repro.sh, which reruns the command on a copy."""
    dst = os.path.join(keep, tag)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(case_dir, "input"), os.path.join(dst, "input"))
    with open(os.path.join(dst, "repro.sh"), "w") as f:
        f.write("#!/bin/sh\n# %s: %s\n# %s: rc %s (%s)\n# stderr: %s\n" % row)
        f.write('here=$(cd "$(dirname "$0")" && pwd)\nrm -rf "$here/run" && mkdir -p "$here/run/tmp"\n')
        f.write('cp -r "$here/input/%s" "$here/run/" && cd "$here/run" || exit 1\n' % name)
        f.write('ulimit -c 0; %sexport OMP_NUM_THREADS=1 TMPDIR="$here/run/tmp"\n' %
                ("ulimit -v %d; " % (mem_mb << 10) if mem_mb else ""))
        f.write("exec %s\n" % " ".join(shlex.quote(a) for a in argv))
    os.chmod(os.path.join(dst, "repro.sh"), 0o755)


def signature(row):
    """What distinguishes one bug from another: the command, the file and the kind of mutation
    (values and positions dropped), the status and the stderr line with its numbers dropped."""
    fmt, desc, label, rc, kinds, last = row
    where, _, op = desc.rpartition(": ") if ": " in desc else ("", "", desc)
    words = op.replace(" +crc", "").split()
    kind = " ".join(words[:2] if words[0] in ("set", "drop", "rename", "header", "gz", "zip", "content")
                    else words[:1])
    norm = lambda t: re.sub(r"\b\d+\b", "N", t)
    return (norm(kinds), label, norm(where), norm(kind) + (" +crc" if "+crc" in op else ""), str(rc),
            norm(re.sub(r"/\S+", "PATH", last))[:120])


class Campaign:
    """The variants and runs of one fuzzing session and what they found."""
    COLS = ["variants", "runs", "crashes", "hangs", "leftovers", "silent", "odd"]
    PLURAL = {"crash": "crashes", "hang": "hangs", "leftover": "leftovers", "silent": "silent", "odd": "odd"}

    def __init__(self, args, formats, work, keep):
        self.args, self.formats, self.keep = args, formats, keep
        # With --keep the bases live there: partition.json and repro.sh name them by absolute path.
        self.base = derive(args, SEEDS, os.path.join(keep or work, "base"), "checkpoint" in formats)
        self.case_dir = os.path.join(work, "case")
        # One random stream per format: the k-th variant of a format depends only on --seed (not
        # on the other formats, nor on timing); how many variants a session reaches depends on time.
        self.rngs = {f: random.Random("%d:%s" % (args.seed, f)) for f in formats}
        self.seen = {f: set() for f in formats}
        self.stats = {f: dict.fromkeys(self.COLS, 0) for f in formats}
        self.failures, self.notes, self.cases = [], [], 0

    def fuzz(self, deadline):
        while time.monotonic() < deadline:
            for fmt in self.formats:
                for _ in range(PER_CYCLE[fmt]):
                    if time.monotonic() < deadline:
                        self.variant(fmt, deadline)
        shutil.rmtree(self.case_dir, ignore_errors=True)

    def variant(self, fmt, deadline):
        rng = self.rngs[fmt]
        for _ in range(5):  # skip exact repeats of an earlier variant
            src, changes, desc = make_variant(fmt, rng, self.base)
            digest = hashlib.sha1(repr(sorted(changes.items())).encode()).digest()
            if digest not in self.seen[fmt]:
                break
        self.seen[fmt].add(digest)
        self.cases += 1
        self.stats[fmt]["variants"] += 1
        name = os.path.basename(src)
        shutil.rmtree(self.case_dir, ignore_errors=True)
        os.makedirs(os.path.join(self.case_dir, "input"))
        copy_in(src, os.path.join(self.case_dir, "input", name), changes)
        for i, (label, argv) in enumerate(commands(fmt, name, rng, self.args, self.base)):
            if time.monotonic() >= deadline:
                break
            # each command on its own copy: one's outputs (report.svg) never feed another
            folder = os.path.join(self.case_dir, "run%d" % i)
            shutil.copytree(os.path.join(self.case_dir, "input"), folder)
            rc, err = run(argv, folder, self.args.timeout, self.args.mem_mb, folder + ".err")
            kinds, notes, left = classify(rc, err, folder)
            self.stats[fmt]["runs"] += 1
            for k in kinds + notes:
                self.stats[fmt][self.PLURAL[k]] += 1
            shown = "timeout" if rc is None else rc if rc >= 0 else signal.Signals(-rc).name
            row = (fmt, desc, label, shown, ",".join(kinds + notes),
                   last_line(err) + ("  [left: %s]" % ", ".join(left) if left else ""))
            if kinds:
                self.failures.append(row)
                if self.keep:
                    tag = "%s-%04d-%s" % (fmt, self.cases, re.sub(r"\W+", "_", label).strip("_"))
                    keep_case(self.keep, self.case_dir, tag, row, argv, name, self.args.mem_mb)
            elif notes:
                self.notes.append(row)

    def report(self, seconds):
        print("shardgnn fuzz: seed %d, %.0f s, %s" % (self.args.seed, seconds, self.args.shardgnn))
        print("%-15s" % "format" + "".join("%10s" % c for c in self.COLS))
        for f in self.formats:
            print("%-15s" % f + "".join("%10d" % self.stats[f][c] for c in self.COLS))
        print("%-15s" % "total" + "".join("%10d" % sum(s[c] for s in self.stats.values()) for c in self.COLS))
        for title, rows in (("failing cases", self.failures), ("notes (not failures)", self.notes)):
            if rows:
                print("\n%s (%d): format | mutation | command | rc | kind | stderr's last line" % (title, len(rows)))
                for r in rows:
                    print("  %s | %s | %s | rc %s | %s | %s" % r)
        groups = {}
        for r in self.failures:
            groups.setdefault(signature(r), []).append(r)
        if groups:
            print("\ndistinct failure signatures (%d): kind | command | file | mutation | rc | stderr" % len(groups))
            for sig, rows in sorted(groups.items()):
                print("  %s  (x%d)" % (" | ".join(sig), len(rows)))
        if self.keep and self.failures:
            print("\ninputs and repro.sh of the failing cases: %s" % self.keep)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shardgnn", required=True, help="the binary under test")
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--seconds", type=float, default=60, help="stop starting runs after this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", help="scratch folder (default: a new temporary one, removed)")
    ap.add_argument("--keep", help="copy each failing case's input and a repro.sh here")
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of: " + ",".join(FORMATS))
    ap.add_argument("--no-mpi", action="store_true", help="no mpiexec train on partitions")
    ap.add_argument("--no-train", action="store_true", help="no train runs (and no checkpoint format)")
    ap.add_argument("--timeout", type=float, default=20, help="per-run limit in seconds")
    ap.add_argument("--mem-mb", type=int, default=4096,
                    help="address-space limit per run in MiB (0: none, as ASan builds need)")
    args = ap.parse_args()
    args.shardgnn = os.path.abspath(args.shardgnn)
    formats = [f for f in args.formats.split(",") if f]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        ap.error("unknown format(s) '%s'; known: %s" % (",".join(bad), ",".join(FORMATS)))
    if args.no_train and "checkpoint" in formats:
        formats.remove("checkpoint")  # its only reader is train --resume
    work = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="shardgnn-fuzz-")
    os.makedirs(work, exist_ok=True)
    try:
        campaign = Campaign(args, formats, work, os.path.abspath(args.keep) if args.keep else None)
        start = time.monotonic()
        campaign.fuzz(start + args.seconds)
        campaign.report(time.monotonic() - start)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if campaign.failures else 0


if __name__ == "__main__":
    sys.exit(main())
