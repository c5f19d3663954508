"""Warnings meant for the user name the user's line, and ir_datasets' metadata of the ``instruct/…`` ids.

ir_datasets' own test suite (``test/metadata.py``, ``test_all_metadata_available``) asks every registered id for
``dataset.metadata()`` with a ``count`` per entity type; :func:`_metadata_complete` is that check."""
from __future__ import annotations

import warnings

import ir_datasets
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import AP, RR, nDCG
from test_experiment import _tiny_paired

import pyterrier_instruct as pti
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
    topics, qrels, run = _tiny_paired(4)
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
    og, ch = (qrels[qrels.qid.str.endswith(v)].assign(qid=lambda f: f.qid.str.rsplit("-", n=1).str[0]) for v in ("-og", "-changed"))
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
    dataset = ir_datasets.load(dsid)
    metadata = dataset.metadata()
    return all(e.value in metadata and "count" in metadata[e.value] for e in ir_datasets.EntityType if dataset.has(e))


def test_instruct_ids_carry_ir_datasets_metadata():
    ids = [d for d in ir_datasets.registry._registered if d.startswith("instruct/")]
    assert len(ids) >= 200
    local = [d for d in ids if METADATA.lazy[d.split("/", 1)[1]].local()]
    # the bundled miniatures and every id whose files are here (tests/data/layouts) pass ir_datasets' check
    assert {"instruct/instruct-mini", "instruct/infosearch-mini"} <= set(local) and len(local) >= 40
    for dsid in ["instruct/instruct-mini", "instruct/infosearch-mini"] + local[::8]:
        assert _metadata_complete(dsid), dsid
    # the recorded counts are the files' counts
    for name, counts in RECORDED_COUNTS.items():
        dataset = ir_datasets.load(f"instruct/{name}")
        assert counts == {"docs": sum(1 for _ in dataset.docs_iter()), "queries": sum(1 for _ in dataset.queries_iter()),
                          "qrels": sum(1 for _ in dataset.qrels_iter()), "scoreddocs": sum(1 for _ in dataset.scoreddocs_iter())}
        assert dataset.metadata() == {k: {"count": v} for k, v in counts.items()}
        assert dataset.queries_count() == counts["queries"]
    # an id whose files are not here is never downloaded for its metadata; ir_datasets' own ids keep theirs
    absent = next(d for d in ids if d not in local)
    assert ir_datasets.load(absent).metadata()["docs"] == {}
    assert ir_datasets.load("vaswani").metadata()["docs"]["count"] == 11429


def test_bright_qrels_in_ir_datasets_hold_the_gold_ids_only():
    qrels = pd.DataFrame(ir_datasets.load("instruct/bright/leetcode").qrels_iter())
    assert (qrels["relevance"] == 1).all() and "leetcode/doc_4.txt" not in set(qrels[qrels.query_id == "0"]["doc_id"])
    with pytest.raises(KeyError):
        ir_datasets.load("instruct/bright/leetcode").qrels_defs()[-100]
