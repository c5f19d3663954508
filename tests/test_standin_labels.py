"""Stand-ins are labelled wherever a number computed with them is shown (issue 45): the stand-in builder marks the data
and weight folders it writes, the loaders read the mark (not a command-line flag), and every table, footer, file and
pipeline output says ``[stand-in]`` with no published number or Δ beside such a row."""
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct import _hub, testing
from pyterrier_instruct.evaluation._report import build_table, footer, system_names
from pyterrier_instruct.reproduce.cli import main

LAYOUTS = Path(os.environ["PYTERRIER_INSTRUCT_DATA"])  # unmarked miniatures (tests/conftest.py)
MONOT5 = "castorini/monot5-base-msmarco-10k"


@pytest.fixture(scope="module")
def standin_data(tmp_path_factory):
    """The miniature benchmarks as the stand-in builder installs them (each dataset folder marked)."""
    return Path(testing.install_datasets(tmp_path_factory.mktemp("standin-data")))


def _checkpoint(root, hub_id, marker):
    """A checkpoint folder (config only: nothing here loads it) at ``root/<hub id>``, marked as a stand-in or not."""
    folder = Path(root) / hub_id
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    if marker:
        (folder / _hub.STAND_IN_MARKER).write_text("{}")


def test_the_builder_marks_every_dataset_folder_and_the_loaders_read_it(standin_data):
    assert (standin_data / "jhu-clsp" / "robust04-instructions" / _hub.STAND_IN_MARKER).is_file()
    assert (standin_data / "songtingyu" / "IFIR" / _hub.STAND_IN_MARKER).is_file()
    robust = pti.load_dataset("followir/robust04", path=str(standin_data / "jhu-clsp" / "robust04-instructions"))
    assert robust.provenance["stand_in"] is True
    fiqa = pti.load_dataset("ifir/fiqa", path=str(standin_data / "songtingyu" / "IFIR"))  # the subset folder inside
    assert fiqa.path.name == "fiqa" and fiqa.provenance["stand_in"] is True
    by_folder = pti.load_dataset(str(standin_data / "jhu-clsp" / "robust04-instructions"))  # a FollowIR folder by hand
    assert by_folder.provenance["stand_in"] is True
    real = pti.load_dataset("followir/robust04", path=str(LAYOUTS / "jhu-clsp" / "robust04-instructions"))
    assert "stand_in" not in real.provenance


def test_an_older_stand_in_root_is_marked_when_installed_again(tmp_path):
    shutil.copytree(LAYOUTS / "jhu-clsp", tmp_path / "jhu-clsp")
    (tmp_path / ".done").write_text("pyterrier_instruct.testing.layouts")  # written before folders were marked
    testing.install_datasets(tmp_path)
    assert (tmp_path / "jhu-clsp" / "news21-instructions" / _hub.STAND_IN_MARKER).is_file()


def test_cli_on_stand_in_data_labels_rows_and_prints_no_paper_numbers(standin_data, tmp_path, capfd):
    # before: "BM25 (pool) 79.6 … paper: BM25 (FollowIR) 12.1 … Δ ours − paper +67.5" and a footer without a marker
    assert main(["followir", "--dataset", "followir/robust04", "--data-root", str(standin_data), "--systems", "bm25",
                 "--quiet", "--out", str(tmp_path)]) == 0
    out, _ = capfd.readouterr()
    assert "| BM25 (pool) [stand-in] |" in out and "paper:" not in out and "Δ" not in out
    text = " ".join(out.split())
    assert "Data: robust04 (stand-in, local, sha256:" in text
    assert "Rows labelled [stand-in] were computed with stand-ins" in text
    for name in ("table2.csv", "table2.paper.csv"):
        assert pd.read_csv(tmp_path / name)["Model"].tolist() == ["BM25 (pool) [stand-in]"]
    md = (tmp_path / "table2.md").read_text()
    assert "| BM25 (pool) [stand-in] |" in md and "stand-in, local" in md and "paper:" not in md
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["stand_ins"] == {"datasets": ["followir/robust04"], "rows": ["BM25 (pool) [stand-in]"]}
    assert report["tables"]["table2"]["paper_rows"] == {}
    assert report["tables"]["table2"]["provenance"]["robust04"]["stand_in"] is True


def _table(models, provenance):
    long = pd.DataFrame([(m, "robust04", "MAP@1000", 0.5) for m in models],
                        columns=["model", "dataset", "measure", "value"])
    return build_table(long, "followir", models=models, settings={"ties": "docno"}, provenance=provenance)


def test_no_paper_numbers_beside_stand_in_weights_and_the_footer_says_why():
    real = {"robust04": {"name": "followir/robust04", "revision": "a" * 40}}
    table = _table(["BM25", "MonoT5-base [stand-in]"], real)
    both = pti.with_paper(table, {"BM25": "BM25", "MonoT5-base": "MonoT5-base"})  # the label may be left out
    assert both["Model"].tolist() == ["BM25", "  paper: BM25 (FollowIR)", "  Δ ours − paper", "MonoT5-base [stand-in]"]
    assert both.attrs["paper_rows"] == {"BM25": "BM25"}
    assert "Rows labelled [stand-in] were computed with stand-ins" in " ".join(footer(both).split())
    assert "stand-in" not in footer(_table(["BM25"], real))


def test_a_table_over_stand_in_data_labels_every_row_and_gets_no_paper_numbers():
    fake = {"name": "followir/robust04", "stand_in": True, "revision": None, "content_sha256": "sha256:" + "b" * 64}
    table = _table(["BM25", "MonoT5-base"], {"robust04": fake})
    assert table["Model"].tolist() == ["BM25 [stand-in]", "MonoT5-base [stand-in]"]
    both = pti.with_paper(table, {"BM25": "BM25", "MonoT5-base": "MonoT5-base"})
    assert both["Model"].tolist() == table["Model"].tolist() and both.attrs["paper_rows"] == {}
    assert "Data: robust04 (stand-in, local, sha256:bbbbbbbbbbbb)." in " ".join(footer(both).split())


def test_reports_and_experiments_label_the_systems_that_load_stand_in_weights(tmp_path, monkeypatch, standin_data):
    monkeypatch.setenv(_hub.MODELS_ENV, str(tmp_path))
    _checkpoint(tmp_path, MONOT5, marker=True)
    _checkpoint(tmp_path, "jhu-clsp/FollowIR-7B", marker=False)
    pool = pti.PoolBM25(verbose=False)
    systems = {"BM25": pool, "MonoT5": pool >> pti.MonoT5(verbose=False), "FollowIR": pti.FollowIR7B(verbose=False)}
    assert system_names(systems, None)[1] == ["BM25", "MonoT5 [stand-in]", "FollowIR"]  # every *_report's rows
    res = pd.DataFrame({"name": list(systems), "pMRR": [0.1, 0.2, 0.3]})
    labelled = pti.label_stand_ins(res, list(systems.values()))
    assert labelled["name"].tolist() == ["BM25", "MonoT5 [stand-in]", "FollowIR"]
    data = pti.load_dataset("followir/robust04", path=str(standin_data / "jhu-clsp" / "robust04-instructions"))
    labelled = pti.label_stand_ins(res, list(systems.values()), data)
    assert labelled["name"].tolist() == ["BM25 [stand-in]", "MonoT5 [stand-in]", "FollowIR [stand-in]"]
    assert res["name"].tolist() == list(systems)  # the experiment's frame is left as it was
    with pytest.raises(ValueError, match="2 systems for 3 rows"):
        pti.label_stand_ins(res, [pool, pool])


# A pipeline file labels its stand-in rows: pipelines/infosearch.py --standins prints "BM25 (pool) [stand-in]",
# "MonoT5 [stand-in]" and "FollowIR-7B [stand-in]" (was: "MonoT5" alone), asserted where tests/test_pipeline_files.py
# runs every pipeline file as a researcher does (test_pipeline_runs_on_standins[infosearch.py]).
