"""The dense document cache on disk, now (``VectorCache``, SQLite) against the cache at ``--before`` (a git revision
of this repository, loaded from ``git show``; by default the hand-written journal ``DocCache``): the time to write
``--rows`` random passages × ``--dim`` float32 dimensions in blocks of 16,384, the size on disk, and, in a fresh Python
process per cache, the time and peak memory of opening it to look up ``--lookup`` passages: the Python heap peak
(tracemalloc, numpy buffers included) and the process's peak resident set (``VmHWM``) above what it held after its
imports, each divided by the cache's size.

Usage: ``python benchmarks/bench_doccache.py [--rows 200000] [--dim 384] [--lookup 10] [--before 28095df]``
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "pyterrier_instruct.dense.cache_before"  # the module name the previous cache is loaded under

CHILD = r"""
import importlib, importlib.util, json, sys, time, tracemalloc
module_path, cache_dir, lookup = sys.argv[1], sys.argv[2], int(sys.argv[3])
if module_path.endswith(".py"):  # the previous cache, from git
    spec = importlib.util.spec_from_file_location("pyterrier_instruct.dense.cache_before", module_path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
else:
    mod = importlib.import_module(module_path)

def hwm_kib(field="VmHWM"):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

try:  # reset the peak to the current resident set (Linux 4.0+)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
base = hwm_kib("VmRSS")
texts = [f"passage {i}" for i in range(0, lookup * 997, 997)]
tracemalloc.start()
t = time.perf_counter()
if hasattr(mod, "VectorCache"):
    cache = mod.VectorCache(cache_dir)
    hits, vectors = cache.lookup(cache.space("bench", "r1"), texts)
    found = len(hits)
else:
    cache = mod.DocCache(cache_dir, "bench", "r1")
    rows, missing = cache.lookup(texts)
    vectors, found = cache.vectors(rows), lookup - len(missing)
seconds = time.perf_counter() - t
heap = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
assert found == lookup and vectors.shape[0] == lookup
print(json.dumps({"heap": heap, "rss": (hwm_kib() - base) * 1024, "seconds": seconds}))
"""


def _module(path: str):
    if not path.endswith(".py"):
        return importlib.import_module(path)
    spec = importlib.util.spec_from_file_location(BEFORE, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def build(module_path: str, cache_dir: str, rows: int, dim: int):
    """A cache of ``rows`` passages written in blocks with the cache of ``module_path``: (bytes on disk, seconds)."""
    import numpy as np
    mod, rng, block = _module(module_path), np.random.default_rng(0), 16384
    t = time.perf_counter()
    if hasattr(mod, "VectorCache"):
        store = mod.VectorCache(cache_dir)
        space = store.space("bench", "r1")
        add = lambda texts, vectors: store.add(space, texts, vectors)  # noqa: E731
    else:
        add = mod.DocCache(cache_dir, "bench", "r1").add
    for start in range(0, rows, block):
        n = min(block, rows - start)
        add([f"passage {i}" for i in range(start, start + n)], rng.standard_normal((n, dim), dtype=np.float32))
    seconds = time.perf_counter() - t
    if hasattr(mod, "VectorCache"):
        store.close()  # the last connection checkpoints the write-ahead log into the database
    return sum(f.stat().st_size for f in Path(cache_dir).rglob("*") if f.is_file()), seconds


def measure(module_path: str, cache_dir: str, lookup: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, module_path, cache_dir, str(lookup)], check=True,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--lookup", type=int, default=10)
    ap.add_argument("--before", default="28095df", help="git revision of the previous cache")
    args = ap.parse_args()
    if args.rows < args.lookup * 997:
        ap.error(f"--rows must be at least {args.lookup * 997} (the looked-up passages are spread over the cache)")
    mib = 2 ** 20
    print(f"{args.rows:,} passages × {args.dim} dims; lookup of {args.lookup} passages")
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "cache_before.py"
        before.write_text(subprocess.run(["git", "-C", str(ROOT), "show",
                                          f"{args.before}:pyterrier_instruct/dense/cache.py"],
                                         check=True, capture_output=True, text=True).stdout)
        for name, module in (("before", str(before)), ("now", "pyterrier_instruct.dense.cache")):
            folder = os.path.join(tmp, name)
            size, seconds = build(module, folder, args.rows, args.dim)
            r = measure(module, folder, args.lookup)
            label = args.before if name == "before" else "this tree"
            print(f"{name:>6} ({label}): write {args.rows / seconds:9,.0f} rows/s, {size / mib:6.0f} MiB on disk; "
                  f"open + lookup {r['seconds'] * 1000:6.1f} ms, heap peak {r['heap'] / mib:6.2f} MiB "
                  f"({r['heap'] / size:.4f} × the cache), RSS peak +{r['rss'] / mib:6.1f} MiB "
                  f"({r['rss'] / size:.4f} × the cache)")


if __name__ == "__main__":
    main()
