"""Without the package's measures, ``pt.Experiment`` is PyTerrier's own: the same experiments (every option, string and
unknown measure names, odd labels, saved runs, tree plans, warnings) run in two fresh processes, one that imports
pyterrier_instruct and one that does not, and their results, errors and warnings (message, category, file and line)
must be identical. One subprocess each runs every experiment on tiny frames (``pt.Transformer.from_df``; no model)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r'''
import json, os, sys, warnings
import pandas as pd
import pyterrier as pt
if sys.argv[1] == "loaded":
    import pyterrier_instruct  # noqa: F401
    from pyterrier_instruct import _pt_compat
    assert _pt_compat.STATUS == "active", _pt_compat.STATUS
from ir_measures import AP, P, RR, nDCG

topics = pd.DataFrame({"qid": ["1", "2", "3", "4"], "query": ["a b", "c d", "e f", "g h"]})
extra = pd.concat([topics, pd.DataFrame({"qid": ["9"], "query": ["unjudged"]})], ignore_index=True)
docs = [f"d{i}" for i in range(6)]
def run(seed):
    rows = []
    for q in ["1", "2", "3", "4", "9"]:
        for i, d in enumerate(docs):
            rows.append((q, d, float((i * 7 + int(q) * 3 + seed * 5) % 11)))
    r = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    return pt.model.add_ranks(r)
run_a, run_b = run(1), run(2)
A, B = pt.Transformer.from_df(run_a), pt.Transformer.from_df(run_b)
qrels = pd.DataFrame({"qid": ["1", "1", "2", "2", "3", "3", "4"], "docno": ["d0", "d3", "d1", "d2", "d5", "d4", "d2"],
                      "label": [1, 2, 0, 1, 2, 1, 1]})
odd = pd.concat([qrels, pd.DataFrame({"qid": ["1", "2", "3"], "docno": ["d1", "d4", "d0"], "label": [-100, -1, 3]})],
                ignore_index=True)
os.makedirs("runs", exist_ok=True)
os.makedirs("runs2", exist_ok=True)
with open("qrels.txt", "w") as f:
    f.writelines(f"{q} 0 {d} {l}\n" for q, d, l in zip(odd.qid, odd.docno, odd.label))
MS = [AP @ 100, nDCG @ 10, P @ 5]
E = pt.Experiment
experiments = [
    ("base", lambda: E([A, B], topics, qrels, MS)),
    ("names", lambda: E([A, B], topics, qrels, MS, names=["a", "b"])),
    ("dict baseline", lambda: E({"a": A, "b": B}, topics, qrels, MS, baseline="b")),
    ("baseline", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], baseline=0)),
    ("correction", lambda: E([A, B, A % 3], topics, qrels, MS, names=["a", "b", "c"], baseline=0,
                             correction="bonferroni")),
    ("wilcoxon", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], baseline=0, test="wilcoxon")),
    ("perquery", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], perquery=True)),
    ("perquery both", lambda: E([A, B], extra, qrels, MS, names=["a", "b"], perquery="both")),
    ("dict out", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], dataframe=False)),
    ("batch 1", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], batch_size=1)),
    ("batch 3 perquery", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], batch_size=3, perquery=True)),
    ("tree", lambda: E([A % 3, A % 5], topics, qrels, MS, names=["a", "b"], plan="tree", verbose=False)),
    ("tree batch", lambda: E([A % 3, B], topics, qrels, MS, names=["a", "b"], plan="tree", batch_size=2,
                             verbose=False)),
    ("precompute prefix", lambda: E([A % 3, A % 5], topics, qrels, MS, names=["a", "b"], precompute_prefix=True)),
    ("save reuse 1", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], save_dir="runs", save_mode="reuse")),
    ("save reuse 2", lambda: E([B, A], topics, qrels, MS, names=["a", "b"], save_dir="runs", save_mode="reuse")),
    ("save warn", lambda: E([A], topics, qrels, MS, names=["a"], save_dir="runs", save_mode="warn")),
    ("save error", lambda: E([A], topics, qrels, MS, names=["a"], save_dir="runs", save_mode="error")),
    ("save overwrite", lambda: E([B], topics, qrels, MS, names=["a"], save_dir="runs", save_mode="overwrite")),
    ("save other measures", lambda: E([A], topics, qrels, [RR], names=["c"], save_dir="runs", save_mode="reuse")),
    ("save batched", lambda: E([A], topics, qrels, MS, names=["d"], save_dir="runs2", batch_size=2)),
    ("qrels path", lambda: E([A, B], topics, "qrels.txt", MS, names=["a", "b"])),
    ("label -100 frame", lambda: E([A, B], topics, odd, [nDCG @ 10, AP @ 100], names=["a", "b"])),
    ("label -100 perquery", lambda: E([A], topics, odd, [nDCG @ 10], names=["a"], perquery=True)),
    ("graded", lambda: E([A, B], topics, odd, [AP(rel=2) @ 100, nDCG @ 10, P(rel=2) @ 5], names=["a", "b"])),
    ("trec names", lambda: E([A, B], topics, qrels, ["map", "ndcg_cut_10", "P_5", "recip_rank"], names=["a", "b"])),
    ("string nDCG@10", lambda: E([A], topics, qrels, ["nDCG@10"], names=["a"])),
    ("string AP(rel=2)@100", lambda: E([A], topics, qrels, ["AP(rel=2)@100", "map"], names=["a"])),
    ("unknown name", lambda: E([A], topics, qrels, ["foo"], names=["a"])),
    ("unknown mixed", lambda: E([A], topics, qrels, [AP @ 100, "nonsense@3"], names=["a"])),
    ("official", lambda: E([A], topics, qrels, ["official"], names=["a"])),
    ("mrt", lambda: E([A, B], topics, qrels, [AP @ 100, "mrt"], names=["a", "b"])),
    ("round", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], round=3)),
    ("round dict", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], round={"AP@100": 2})),
    ("highlight", lambda: E([A, B], topics, qrels, MS, names=["a", "b"], baseline=0, highlight="bold")),
    ("filter_by_qrels", lambda: E([A], extra, qrels, MS, names=["a"], filter_by_qrels=True)),
    ("filter_by_topics off", lambda: E([A], topics[topics.qid != "4"], qrels, MS, names=["a"], filter_by_topics=False)),
    ("result frames", lambda: E([run_a, run_b], topics, qrels, MS, names=["a", "b"])),
    ("validate ignore", lambda: E([A], topics, qrels, MS, names=["a"], validate="ignore")),
    ("empty result", lambda: E([A], pd.DataFrame({"qid": ["77"], "query": ["x"]}), qrels, MS, names=["a"],
                               filter_by_topics=False)),
]


def text(value):
    if isinstance(value, tuple):
        return [text(v) for v in value]
    if hasattr(value, "data") and hasattr(value, "to_html"):  # a Styler
        value = value.data
    if isinstance(value, pd.DataFrame):
        if "mrt" in value.columns:
            value = value.assign(mrt="<time>")
        return value.to_csv()
    if isinstance(value, dict):
        return repr({k: ({m: v for m, v in d.items() if m != "mrt"} if isinstance(d, dict) else d)
                     for k, d in value.items()})
    return repr(value)


import re
out = []
for label, experiment in experiments:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            result = text(experiment())
        except Exception as err:
            result = f"{type(err).__module__}.{type(err).__name__}: {err}"
    def same(t):  # object addresses differ between processes
        return re.sub(r" at 0x[0-9a-f]+", " at 0x", t) if isinstance(t, str) else [same(v) for v in t]
    out.append({"experiment": label, "result": same(result),
                "warnings": [[w.category.__name__, same(str(w.message)), w.filename, w.lineno] for w in record]})
print(json.dumps(out))
'''


def _run(script: Path, kind: str, cwd: Path) -> list:
    cwd.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
               PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, str(script), kind], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_experiments_without_package_measures_are_pyterriers_own(tmp_path):
    script = tmp_path / "experiments.py"
    script.write_text(SCRIPT)
    plain, loaded = _run(script, "plain", tmp_path / "plain"), _run(script, "loaded", tmp_path / "loaded")
    assert len(plain) == len(loaded) >= 25
    for without, with_package in zip(plain, loaded):
        assert with_package == without, without["experiment"]
    by_name = {e["experiment"]: e for e in plain}
    # the cases that used to differ, and what PyTerrier gives
    assert "unkonwn measure nDCG@10" in by_name["string nDCG@10"]["result"]
    assert "unkonwn measure AP(rel=2)@100" in by_name["string AP(rel=2)@100"]["result"]
    assert by_name["label -100 frame"]["result"].startswith(",name,nDCG@10,AP@100")
    # PyTerrier's own warnings name the line of the script that called pt.Experiment
    saved = [w for w in by_name["save other measures"]["warnings"] if "Evaluation measures differ" in w[1]]
    assert saved and saved[0][2] == str(script)
    deprecated = [w for w in by_name["precompute prefix"]["warnings"] if w[0] == "DeprecationWarning"]
    assert deprecated and deprecated[0][2] == str(script)
