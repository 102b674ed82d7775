"""The peers' result file: one JSON object, written whole or not at all, which the benchmark that
ran the peer reads (no benchmark parses another program's stdout)."""
import json
import os


def write_result(path, obj):
    """Writes `obj` to `path` through a temporary beside it, so a reader never sees half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.write("\n")
    os.replace(tmp, path)
