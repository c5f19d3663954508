"""The reproduction tables say what they show (issue 38): BRIGHT's mean labelled, no paper Δ beside a miniature,
stand-in and unrevisioned checkpoints named in their row, ``--quiet`` silencing every bar, no cursor movement in a log,
a short wrapped provenance footer, and a temporary BM25 index named by the corpus it was built from."""
import io
import json
import os
from argparse import Namespace

import pandas as pd
from tqdm import std

from pyterrier_instruct import _hub
from pyterrier_instruct._progress import silenced, tqdm
from pyterrier_instruct.evaluation._report import footer, short_provenance
from pyterrier_instruct.reproduce.cli import main
from pyterrier_instruct.reproduce.arguments import Row
from pyterrier_instruct.reproduce.output import miniatures
from pyterrier_instruct.reproduce.systems import row_name


def test_infosearch_miniature_has_no_paper_rows_and_quiet_prints_no_bar(tmp_path, capfd):
    assert main(["infosearch", "--dataset", "infosearch-mini", "--systems", "bm25", "--table", "2", "--quiet",
                 "--out", str(tmp_path)]) == 0
    out, err = capfd.readouterr()
    # before: "  paper: BM25 (InfoSearch)" and "Δ ours − paper" rows of +35.6 … +68.1 for a 12-instance toy
    paper = pd.read_csv(tmp_path / "table2.paper.csv")
    assert paper["Model"].tolist() == ["BM25 (pool)"] and "paper:" not in out and "Δ" not in out
    assert "No published numbers beside infosearch-mini" in out
    assert json.loads((tmp_path / "report.json").read_text())["tables"]["table2"]["paper_rows"] == {}
    assert err == ""  # --quiet: not the PoolBM25 bar, not any other
    footer_lines = out.split("| BM25 (pool) |")[1].splitlines()[2:]
    assert footer_lines[0] == "WISE=2024, SICR=code, ties=input. Data: infosearch-mini (bundled)."
    assert footer_lines[2] == f"Full provenance of the data and the models: {tmp_path / 'report.json'}."


def test_bm25_over_an_unnamed_corpus_is_named_by_its_digest_and_a_kept_index_by_its_path(tmp_path):
    import pyterrier_instruct as pti
    docs = [{"docno": "d1", "text": "a cat"}, {"docno": "d2", "text": "a dog"}]
    temporary = pti.BM25(iter(docs), verbose=False)
    assert repr(temporary).startswith("BM25(<corpus 2:") and temporary.built_from["temporary"]
    kept = pti.BM25(iter(docs), path=str(tmp_path / "idx"), verbose=False)
    assert repr(kept) == f"BM25({str(tmp_path / 'idx')!r}, k1=0.9, b=0.4, num_results=1000)"
    assert kept.built_from["digest"] == temporary.built_from["digest"]


def test_nested_bars_in_a_log_never_move_the_cursor():
    log = io.StringIO()  # a file or a pipe: not a terminal
    for _ in tqdm(range(2), file=log, desc="outer", mininterval=0):
        for _ in tqdm(range(2), file=log, desc="inner", mininterval=0, leave=False):
            pass
    assert "inner" in log.getvalue() and "\x1b[" not in log.getvalue()
    raw = io.StringIO()  # tqdm itself moves the cursor up for the inner bar: what `make demo`'s log showed as ^[[A
    for _ in std.tqdm(range(2), file=raw, mininterval=0):
        for _ in std.tqdm(range(2), file=raw, mininterval=0, leave=False):
            pass
    assert "\x1b[A" in raw.getvalue()
    quiet = io.StringIO()
    with silenced():
        for _ in tqdm(range(2), file=quiet):
            pass
    assert quiet.getvalue() == ""


def test_footer_is_short_and_wrapped():
    provenance = {f"task{i}": {"name": f"bright/task{i}", "path": f"/data/xlangai/BRIGHT/task{i}",
                               "repo_id": "xlangai/BRIGHT", "pinned_revision": "a" * 40,
                               "revision": "3066d29c9651a576c8aba4832d249807b181ecae"}
                  for i in range(12)}
    provenance["dd15"] = {"name": "mair/dd-15", "path": "/x/DD_2015", "revision": None,
                          "content_sha256": "sha256:" + "b" * 64}
    table = pd.DataFrame({"Model": ["m"]})
    table.attrs.update(settings={"ties": "docno"}, provenance=provenance)
    text = footer(table)
    assert all(len(line) <= 110 for line in text.splitlines()) and len(text) < 250
    assert " ".join(text.split()) == ("ties=docno. Data: " + ", ".join(f"task{i}" for i in range(12))
                                      + " (3066d29); dd15 (local, sha256:bbbbbbbbbbbb).")
    assert short_provenance({"revision": "bundled with pyterrier-instruct 0.1.0"}) == "bundled"
    assert short_provenance({"path": "/data/my-copy/"}) == "local my-copy"


def _checkpoint(folder, marker=False):
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write("{}")
    if marker:
        with open(os.path.join(folder, _hub.STAND_IN_MARKER), "w") as f:
            f.write("{}")
    return str(folder)


def test_stand_in_and_unrevisioned_checkpoints_are_named_in_the_row(tmp_path, monkeypatch):
    monkeypatch.setenv(_hub.MODELS_ENV, str(tmp_path / "models"))
    rows = {"monot5-base": Row("MonoT5-base", "MonoT5-base", "castorini/monot5-base-msmarco-10k"),
            "gpt-4o": Row("GPT-4o", "GPT-4o", "gpt-4o", hub=False)}
    args = Namespace(models={"monot5-base": "castorini/monot5-base-msmarco-10k", "gpt-4o": "gpt-4o"})
    assert row_name(rows, "monot5-base", args) == "MonoT5-base"  # not local: nothing to say before it is downloaded
    _checkpoint(tmp_path / "models" / "castorini" / "monot5-base-msmarco-10k", marker=True)
    assert row_name(rows, "monot5-base", args) == "MonoT5-base [stand-in]"  # the default id, but tiny random weights
    assert _hub.revision("castorini/monot5-base-msmarco-10k")["stand_in"] is True
    args.models["monot5-base"] = _checkpoint(tmp_path / "mine")
    assert row_name(rows, "monot5-base", args) == "MonoT5-base [mine, unrevisioned]"
    snapshot = _checkpoint(tmp_path / "hub" / "models--castorini--monot5-base-msmarco-10k" / "snapshots" / ("c" * 40))
    args.models["monot5-base"] = snapshot
    assert row_name(rows, "monot5-base", args) == f"MonoT5-base [{'c' * 40}]"  # a cached snapshot: its commit is known
    assert row_name(rows, "gpt-4o", args) == "GPT-4o"  # an API model name is no checkpoint


def test_miniatures_are_the_bundled_datasets():
    assert miniatures(["instruct-mini", "instruct:infosearch-mini", "followir/robust04", "/some/folder"]) == \
        ["instruct-mini", "instruct:infosearch-mini"]


def test_corpus_iter_names_its_dataset(mini):
    it = mini.get_corpus_iter(verbose=False)
    assert it.source == "pti.load_dataset('instruct-mini')" and next(it)["docno"]
