"""Warnings meant for the user name the user's line, and ir_datasets' metadata of the ``instruct/…`` ids.

ir_datasets' own test suite (github allenai/ir_datasets @ ae24b53, ``test/metadata.py:6-8,24-31``,
``test_all_metadata_available``) asks every registered id for ``dataset.metadata()`` with a ``count`` key for every
entity type the dataset has; :func:`_metadata_complete` is that check, against the installed ir_datasets."""
from __future__ import annotations

import warnings

import ir_datasets
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import AP, RR, nDCG
from paired_toys import tiny_paired

import pyterrier_instruct as pti
from pyterrier_instruct.datasets.catalog import BRIGHT_TASKS
from pyterrier_instruct.datasets.irds import METADATA, RECORDED_COUNTS


def _recorded(call):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call()
    return record


def _only(record, text):
    found = [w for w in record if text in str(w.message)]
    assert found, [str(w.message) for w in record]
    return found


def test_warnings_name_the_users_line(tmp_path):
    topics, qrels, run = tiny_paired(4)
    bare = run.drop(columns="instruction")
    system = pt.Transformer.from_df(pt.model.add_ranks(bare))
    # PyTerrier's own warning (stacklevel=2 in pt.Experiment), with and without the package's measures
    pt.Experiment([system], topics, qrels, [pti.pMRR, nDCG @ 5], names=["s"], save_dir=str(tmp_path))
    for measures in ([RR], [pti.OG(AP @ 100), pti.pMRR]):
        record = _recorded(lambda: pt.Experiment([system], topics, qrels, measures, names=["s"], save_dir=str(tmp_path),
                                                 save_mode="overwrite"))
        assert {w.filename for w in _only(record, "Evaluation measures differ")} == {__file__}
    # the package's measures, through pt.Experiment, ir_measures and the plain functions
    for call in (lambda: pt.Experiment([bare], topics, qrels, [pti.pMRR], names=["s"]),
                 lambda: pti.pMRR.calc_aggregate(qrels, bare.rename(columns={"qid": "query_id", "docno": "doc_id"}))):
        assert {w.filename for w in _only(_recorded(call), "has no 'instruction' column")} == {__file__}
    og, ch = (qrels[qrels.qid.str.endswith(v)].assign(qid=lambda f: f.qid.str.rsplit("-", n=1).str[0])
              for v in ("-og", "-changed"))
    renamed = run.assign(docno="x" + run["docno"])  # ids that match nothing in the qrels
    og_run, ch_run = (renamed[renamed.qid.str.endswith(v)].assign(qid=lambda f: f.qid.str.rsplit("-", n=1).str[0])
                      for v in ("-og", "-changed"))
    def unmatched():
        try:
            pti.pmrr(og_run, ch_run, og_qrels=og, changed_qrels=ch)
        except ValueError:  # nothing matches, so p-MRR is undefined; the warning came first
            pass
    record = _recorded(unmatched)
    assert {w.filename for w in _only(record, "shares no docno with the qrels")} == {__file__}


def _metadata_complete(dsid: str) -> bool:
    """``TestMetadata._test_ds`` (``test/metadata.py:24-31``): load, ``metadata()``, and for each ``EntityType`` the
    dataset ``has``, its value is a key with a ``count`` key."""
    dataset = ir_datasets.load(dsid)
    metadata = dataset.metadata()
    return all(e.value in metadata and "count" in metadata[e.value] for e in ir_datasets.EntityType if dataset.has(e))


def test_instruct_ids_carry_ir_datasets_metadata():
    ids = [d for d in ir_datasets.registry._registered if d.startswith("instruct/")]
    assert len(ids) >= 202
    # ir_datasets' check passes for every instruct/ id (it iterates registry._registered, test/metadata.py:7)
    assert [d for d in ids if not _metadata_complete(d)] == []
    local = {d for d in ids if METADATA.lazy[d.split("/", 1)[1]].local()}
    assert {"instruct/instruct-mini", "instruct/infosearch-mini"} <= local and len(local) >= 40
    # the recorded counts of a pinned release are numbers, for every entity type the id has
    for name, counts in RECORDED_COUNTS.items():
        dataset = ir_datasets.load(f"instruct/{name}")
        assert dataset.metadata() == {k: {"count": v} for k, v in counts.items()}
        assert all(isinstance(v, int) and v > 0 for v in counts.values())
    # BRIGHT's counts derived from mteb's statistics of the pinned revision agree with the sizes the registry shows
    for task, (queries, docs, long_docs, gold) in BRIGHT_TASKS.items():
        assert RECORDED_COUNTS[f"bright/{task}"] == \
            {"docs": int(docs.replace(",", "")), "queries": queries, "qrels": gold}
        if long_docs is not None:
            assert RECORDED_COUNTS[f"bright/{task}-long"]["docs"] == int(long_docs.replace(",", ""))
    # the miniatures' recorded counts are the files' counts
    for name in ("instruct-mini", "infosearch-mini"):
        dataset, counts = ir_datasets.load(f"instruct/{name}"), RECORDED_COUNTS[name]
        assert counts == \
            {"docs": sum(1 for _ in dataset.docs_iter()), "queries": sum(1 for _ in dataset.queries_iter()),
             "qrels": sum(1 for _ in dataset.qrels_iter()),
             "scoreddocs": sum(1 for _ in dataset.scoreddocs_iter())}
        assert dataset.queries_count() == counts["queries"]
    # a local copy gives its own counts; an id neither recorded nor here says "unknown" (count None), downloads nothing
    here = next(d for d in sorted(local) if d.split("/", 1)[1] not in RECORDED_COUNTS)
    dataset = ir_datasets.load(here)
    assert dataset.metadata()["queries"] == {"count": sum(1 for _ in dataset.queries_iter())}
    absent = sorted(d for d in ids if d not in local and d.split("/", 1)[1] not in RECORDED_COUNTS)
    assert len(absent) > 100
    for dsid in absent[::20]:
        metadata = ir_datasets.load(dsid).metadata()
        assert set(metadata) >= {"docs", "queries", "qrels"} and all(m == {"count": None} for m in metadata.values())
        assert not METADATA.lazy[dsid.split("/", 1)[1]].local()
    assert ir_datasets.load("vaswani").metadata()["docs"]["count"] == 11429


def test_bright_qrels_in_ir_datasets_hold_the_gold_ids_only():
    qrels = pd.DataFrame(ir_datasets.load("instruct/bright/leetcode").qrels_iter())
    assert (qrels["relevance"] == 1).all() and "leetcode/doc_4.txt" not in set(qrels[qrels.query_id == "0"]["doc_id"])
    with pytest.raises(KeyError):
        ir_datasets.load("instruct/bright/leetcode").qrels_defs()[-100]
