"""The main job (`make demo`) end to end on the bundled benchmark, offline."""
import json

import ir_measures
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_instruct.reproduce.cli import main


def test_demo_writes_table_plot_and_provenance(tmp_path, capfd):
    """The suite's one ``demo --no-neural`` run (also issue 38's checks: --quiet prints no bar, the BM25 corpus
    named)."""
    assert main(["demo", "--out", str(tmp_path), "--quiet", "--no-neural"]) == 0
    printed, err = capfd.readouterr()
    assert "PISA indexing" not in err and "%|" not in err and "\x1b[" not in printed + err  # before: the PISA bar
    assert "| Model | instruct-mini MAP@1000 | instruct-mini p-MRR |" in printed
    table = pd.read_csv(tmp_path / "table.csv")
    assert table["Model"].tolist() == ["BM25 (full index, query)", "BM25 (full index, query+instruction)",
                                       "PoolBM25 (FollowIR BM25)"]
    assert table.loc[0, "instruct-mini p-MRR"] == 0.0  # same query text for og and changed: identical runs
    assert table["instruct-mini MAP@1000"].between(0, 100).all()
    assert (tmp_path / "pmrr_per_query.png").stat().st_size > 5000
    prov = json.loads((tmp_path / "provenance.json").read_text())
    assert prov["queries"] == 10 and prov["p-MRR ties"] == "docno"
    versions = prov["versions"]
    assert {"python", "pyterrier_instruct", "pyterrier", "torch", "transformers", "ir_measures",
            "ir_datasets"} <= set(versions)
    assert versions["pyterrier"] == pt.__version__ and versions["ir_measures"] == ir_measures.__version__
    assert prov["dataset"]["revision"].startswith("bundled with pyterrier-instruct") and prov["dataset"]["path"]
    assert prov["models"] == {}  # --no-neural: BM25 and PoolBM25 load no model
    # before: "BM25('/tmp/pti-pisa-gypv696v', ...)", a folder removed when the process ended
    assert prov["systems"]["BM25 (full index, query)"] == \
        "BM25(pti.load_dataset('instruct-mini').get_corpus_iter(), k1=0.9, b=0.4, num_results=1000)"
    assert "/tmp" not in json.dumps(prov["systems"])
    assert "-0.0" not in (tmp_path / "table.csv").read_text()  # PoolBM25's p-MRR rounds to zero from below
    perquery = pd.read_csv(tmp_path / "perquery.csv", dtype={"qid": str})
    assert perquery["qid"].str.endswith("-og").all() and len(perquery) == 3 * 10 * 2


def test_cli_usage_errors(capsys):
    assert main(["nope"]) == 2
    with pytest.raises(SystemExit):
        main(["demo", "--ties", "random"])


def test_model_provenance_names_the_snapshot_commit(tmp_path, monkeypatch):
    """Each model of a system is recorded with its hub id, its folder and the commit of the snapshot it loads from."""
    import pyterrier_instruct as pti
    from pyterrier_instruct.reproduce.output import model_provenance, models_of
    snapshot = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    local = tmp_path / "models" / "org" / "local"
    (local / ".cache" / "huggingface" / "download").mkdir(parents=True)  # as huggingface-cli download --local-dir does
    (local / "config.json").write_text("{}")
    (local / ".cache" / "huggingface" / "download" / "config.json.metadata").write_text("fedcba98\netag\n1.0\n")
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(tmp_path / "models"))
    mini = pti.load_dataset("instruct-mini")
    system = mini.candidates() >> pti.MonoT5(str(snapshot)) >> pti.RankZephyr("org/local") >> pti.PoolBM25()
    dense = pti.BiEncoder("nobody/absent").retriever(corpus=mini.get_corpus_iter)
    assert models_of(system) == [str(snapshot), "org/local"] and models_of(dense) == ["nobody/absent"]
    assert model_provenance(models_of(system) + models_of(dense)) == [
        {"id": "org/tiny", "path": str(snapshot), "revision": "0123abcd"},
        {"id": "org/local", "path": str(local), "revision": "fedcba98"},
        {"id": "nobody/absent", "path": None, "revision": None}]
