"""Peak memory of opening the dense document cache (``DocCache``) to look up a few passages, as a ratio to the cache's
size on disk, against the previous reader (which read every key and vector into memory) measured in the same run.

Writes a cache of ``--rows`` random passages × ``--dim`` float32 dimensions once, then in a fresh Python process per
reader: opens the cache and looks up ``--lookup`` passages. Reported per reader: the Python heap peak (tracemalloc,
numpy buffers included) and the process's peak resident set (``VmHWM``) above what it held after its imports, each
divided by the cache's size. The previous reader is the module as it was at ``--before`` (a git revision of this
repository), loaded from ``git show``.

Usage: ``python benchmarks/bench_doccache.py [--rows 200000] [--dim 384] [--lookup 10] [--before ee307c3]``
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import importlib.util, json, sys, tracemalloc
import numpy as np
module_path, cache_dir, lookup = sys.argv[1], sys.argv[2], int(sys.argv[3])
if module_path.endswith(".py"):  # the previous reader, from git
    spec = importlib.util.spec_from_file_location("doccache_under_test", module_path)
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
tracemalloc.start()
cache = mod.DocCache(cache_dir, "bench", "r1")
rows, missing = cache.lookup([f"passage {i}" for i in range(0, lookup * 997, 997)])
vectors = cache.vectors(rows)
heap = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
assert not missing and vectors.shape[0] == lookup
print(json.dumps({"heap": heap, "rss": (hwm_kib() - base) * 1024, "rows": len(cache)}))
"""


def build(cache_dir: str, rows: int, dim: int) -> int:
    """A cache of ``rows`` passages written with the current DocCache, in blocks; its size in bytes."""
    import numpy as np

    from pyterrier_instruct.dense.cache import DocCache
    cache, rng, block = DocCache(cache_dir, "bench", "r1"), np.random.default_rng(0), 16384
    for start in range(0, rows, block):
        n = min(block, rows - start)
        cache.add([f"passage {i}" for i in range(start, start + n)], rng.standard_normal((n, dim), dtype=np.float32))
    return sum(f.stat().st_size for f in Path(cache.folder).iterdir())


def measure(module_path: str, cache_dir: str, lookup: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, module_path, cache_dir, str(lookup)], check=True, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--lookup", type=int, default=10)
    ap.add_argument("--before", default="ee307c3", help="git revision of the previous reader")
    args = ap.parse_args()
    if args.rows < args.lookup * 997:
        ap.error(f"--rows must be at least {args.lookup * 997} (the looked-up passages are spread over the cache)")
    with tempfile.TemporaryDirectory() as tmp:
        size = build(tmp, args.rows, args.dim)
        before = Path(tmp) / "cache_before.py"
        before.write_text(subprocess.run(["git", "-C", str(ROOT), "show", f"{args.before}:pyterrier_instruct/dense/cache.py"],
                                         check=True, capture_output=True, text=True).stdout)
        results = {"before": measure(str(before), tmp, args.lookup),
                   "now": measure("pyterrier_instruct.dense.cache", tmp, args.lookup)}
    mib = 2 ** 20
    print(f"cache: {args.rows:,} passages × {args.dim} dims, {size / mib:.0f} MiB on disk; lookup of {args.lookup} passages")
    for name, r in results.items():
        print(f"{name:>6} ({args.before if name == 'before' else 'this tree'}): heap peak {r['heap'] / mib:7.1f} MiB "
              f"({r['heap'] / size:.3f} × the cache)   RSS peak +{r['rss'] / mib:7.1f} MiB ({r['rss'] / size:.3f} × the cache)")
    print(f"heap peak ratio before/now: {results['before']['heap'] / max(results['now']['heap'], 1):.0f}×")


if __name__ == "__main__":
    main()
