"""``pt.Experiment(save_dir=..., save_mode="reuse")`` with the package's measures: a saved run is checked against the
system that wrote it (a fingerprint beside it), so another system under the same name is computed again; without the
package's measures PyTerrier's name-keyed reuse is unchanged."""
from __future__ import annotations

import json
import warnings

import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import nDCG
from paired_toys import tiny_paired

import pyterrier_instruct as pti
from pyterrier_instruct.evaluation.runs import FINGERPRINT_SUFFIX


def _systems():
    topics, qrels, run = tiny_paired(6)
    other = run.assign(score=run["score"][::-1].to_numpy())
    a, b = (pt.Transformer.from_df(pt.model.add_ranks(r)) for r in (run, other))
    return topics, qrels, a, b


def _saved_run_warnings(record):
    return [w for w in record if "saved run" in str(w.message)]


def test_another_system_under_the_same_name_is_computed_again_not_read_back(tmp_path):
    topics, qrels, a, b = _systems()
    ms = [pti.pMRR, nDCG @ 5]
    own_a = pt.Experiment([a], topics, qrels, ms, names=["model"])
    own_b = pt.Experiment([b], topics, qrels, ms, names=["model"])
    assert own_a.loc[0, "pMRR"] != pytest.approx(own_b.loc[0, "pMRR"], abs=1e-3)  # the two systems differ
    saved = dict(save_dir=str(tmp_path), save_mode="reuse")
    first = pt.Experiment([a], topics, qrels, ms, names=["model"], **saved)
    pd.testing.assert_frame_equal(first, own_a)
    stored = json.loads((tmp_path / ("model.res.gz" + FINGERPRINT_SUFFIX)).read_text())
    assert stored["checkable"] and "SourceTransformer" in stored["system"] and stored["name"] == "model"
    assert stored["size"] == (tmp_path / "model.res.gz").stat().st_size and len(stored["sha256"]) == 64

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        second = pt.Experiment([b], topics, qrels, ms, names=["model"], **saved)
    pd.testing.assert_frame_equal(second, own_b)  # B's own numbers, not A's run read back
    [warned] = _saved_run_warnings(record)
    assert str(warned.message).startswith(f"pt.Experiment(save_dir={str(tmp_path)!r}, save_mode='reuse'): the saved "
                                          f"run {str(tmp_path / 'model.res.gz')!r} was written by another system under "
                                          "the name 'model'")
    assert warned.filename == __file__  # the user's line, not the package's

    # the same system again: read back, unchanged, no warning
    before = (tmp_path / "model.res.gz").stat().st_mtime_ns
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        third = pt.Experiment([b], topics, qrels, ms, names=["model"], **saved)
    pd.testing.assert_frame_equal(third, own_b)
    assert _saved_run_warnings(record) == [] and (tmp_path / "model.res.gz").stat().st_mtime_ns == before

    # other topics under the same name: computed again
    og = topics[topics["qid"].str.endswith("-og")]
    with pytest.warns(UserWarning, match="was written by the system now named 'model' for other topics: it is computed "
                                         "again"):
        pt.Experiment([b], og, qrels, [pti.OG(nDCG @ 5)], names=["model"], **saved)


def test_without_the_package_measures_reuse_stays_pyterriers_and_an_unfingerprinted_run_is_named(tmp_path):
    topics, qrels, a, b = _systems()
    saved = dict(save_dir=str(tmp_path), save_mode="reuse")
    own_a = pt.Experiment([a], topics, qrels, [nDCG @ 5], names=["model"])
    pt.Experiment([a], topics, qrels, [nDCG @ 5], names=["model"], **saved)
    assert not (tmp_path / ("model.res.gz" + FINGERPRINT_SUFFIX)).exists()  # nothing is written: PyTerrier's own
    # PyTerrier keys the run by name: B under A's name gets A's run back
    pd.testing.assert_frame_equal(pt.Experiment([b], topics, qrels, [nDCG @ 5], names=["model"], **saved), own_a)
    # with a package measure, a run without a fingerprint cannot be checked: reused as PyTerrier does, and named
    with pytest.warns(UserWarning,
                      match=r"the saved run '.*model.res.gz' has no fingerprint beside it .* it is reused as "
                            r"PyTerrier does, by name. Delete it to compute it again"):
        pt.Experiment([b], topics, qrels, [pti.pMRR, nDCG @ 5], names=["model"], **saved)


class _Foreign(pt.Transformer):
    """A transformer class of another package: its settings cannot be read, so it has no fingerprint."""

    def __init__(self, source):
        self.source, self.calls = source, 0

    def transform(self, topics):
        self.calls += bool(len(topics))
        return self.source(topics)


def test_a_system_without_a_fingerprint_is_computed_again_never_reused_unchecked(tmp_path):
    """Two such systems under one name: each gets its own numbers (was: one key from the repr, B reported A's run),
    with one warning naming the stage and the fix; wrapped in pti.SavedRun(..., key=) its run is reused."""
    topics, qrels, a, b = _systems()
    ms = [pti.pMRR, nDCG @ 5]
    fa, fb = _Foreign(a), _Foreign(b)
    saved = dict(save_dir=str(tmp_path), save_mode="reuse")
    pd.testing.assert_frame_equal(pt.Experiment([fa], topics, qrels, ms, names=["model"], **saved),
                                  pt.Experiment([a], topics, qrels, ms, names=["model"]))
    stored = json.loads((tmp_path / ("model.res.gz" + FINGERPRINT_SUFFIX)).read_text())
    assert stored["checkable"] is False and stored["key"] is None and "_Foreign" in stored["part"]
    for calls in (1, 2):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            got = pt.Experiment([fb], topics, qrels, ms, names=["model"], **saved)
        pd.testing.assert_frame_equal(got, pt.Experiment([b], topics, qrels, ms, names=["model"]))
        assert fb.calls == calls  # computed every time
        [warned] = _saved_run_warnings(record)
        assert "cannot be checked against the system now named 'model': " in str(warned.message)
        assert "_Foreign" in str(warned.message)
        assert "pti.SavedRun(system, 'runs/model', key='model-v1')" in str(warned.message)
    keyed = pti.SavedRun(fb, str(tmp_path / "keyed"), key="foreign-b", verbose=False)
    with pytest.warns(UserWarning, match="written by a system that could not be checked"):
        pt.Experiment([keyed], topics, qrels, ms, names=["model"], **saved)
    before = (tmp_path / "model.res.gz").stat().st_mtime_ns
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = pt.Experiment([keyed], topics, qrels, ms, names=["model"], **saved)
    assert _saved_run_warnings(record) == [] and (tmp_path / "model.res.gz").stat().st_mtime_ns == before  # reused
    pd.testing.assert_frame_equal(got, pt.Experiment([b], topics, qrels, ms, names=["model"]))


def test_a_refused_reuse_names_the_part_of_the_fingerprint_that_differed(tmp_path):
    topics, qrels, a, _ = _systems()
    saved = dict(save_dir=str(tmp_path), save_mode="reuse")
    pt.Experiment([a % 2], topics, qrels, [pti.pMRR], names=["model"], **saved)
    with pytest.warns(UserWarning) as record:
        got = pt.Experiment([a % 3], topics, qrels, [pti.pMRR], names=["model"], **saved)
    pd.testing.assert_frame_equal(got, pt.Experiment([a % 3], topics, qrels, [pti.pMRR], names=["model"]))
    [warned] = _saved_run_warnings(record)
    assert "was written by another system under the name 'model' (the fingerprints differ in k=2 → k=3)" in str(
        warned.message)
    assert repr(a % 3) not in str(warned.message)  # no reprs: they may read the same for different systems


def test_batched_and_warned_runs_get_a_record_that_matches_them(tmp_path):
    """batch_size= (PyTerrier appends each batch to the run) and save_mode='warn' over an existing run (PyTerrier writes
    the file itself): both leave a run whose record names its bytes, reused afterwards without a word."""
    from pyterrier_instruct.evaluation.runs import read_record
    topics, qrels, a, b = _systems()
    topics = topics.assign(base=topics["qid"].str.split("-").str[0]).sort_values(["base", "qid"]).drop(columns="base")
    ms = [pti.pMRR, nDCG @ 5]
    own_a, own_b = (pt.Experiment([s], topics, qrels, ms, names=["model"]) for s in (a, b))
    batched = pt.Experiment([a], topics, qrels, ms, names=["model"], save_dir=str(tmp_path), batch_size=4)
    pd.testing.assert_frame_equal(batched, own_a)
    run = str(tmp_path / "model.res.gz")
    assert read_record(run)[1] is None and len(pt.io.read_results(run)) == len(a.df)
    with pytest.warns(UserWarning, match="save_dir is set, but the file .* already exists"):
        pt.Experiment([b], topics, qrels, ms, names=["model"], save_dir=str(tmp_path), save_mode="warn")
    record, problem = read_record(run)
    assert problem is None and record["system"] == identify_system(b, topics)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = pt.Experiment([b], topics, qrels, ms, names=["model"], save_dir=str(tmp_path), save_mode="reuse")
    pd.testing.assert_frame_equal(again, own_b)
    assert _saved_run_warnings(caught) == []


def identify_system(system, topics):
    from pyterrier_instruct.evaluation.runs import identify
    return identify(system, topics)["system"]
