"""The main job (`make demo`) end to end on the bundled benchmark, offline."""
import json

import pandas as pd
import pytest

from pyterrier_instruct.reproduce.cli import main


def test_demo_writes_table_plot_and_provenance(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--quiet", "--no-neural"]) == 0
    printed = capsys.readouterr().out
    assert "| Model | instruct-mini MAP@1000 | instruct-mini p-MRR |" in printed
    table = pd.read_csv(tmp_path / "table.csv")
    assert table["Model"].tolist() == ["BM25 (full index, query)", "BM25 (full index, query+instruction)",
                                       "PoolBM25 (FollowIR BM25)"]
    assert table.loc[0, "instruct-mini p-MRR"] == 0.0  # same query text for og and changed: identical runs
    assert table["instruct-mini MAP@1000"].between(0, 100).all()
    assert (tmp_path / "pmrr_per_query.png").stat().st_size > 5000
    prov = json.loads((tmp_path / "provenance.json").read_text())
    assert prov["queries"] == 10 and prov["p-MRR ties"] == "docno"
    perquery = pd.read_csv(tmp_path / "perquery.csv", dtype={"qid": str})
    assert perquery["qid"].str.endswith("-og").all() and len(perquery) == 3 * 10 * 2


def test_cli_usage_errors(capsys):
    assert main(["nope"]) == 2
    with pytest.raises(SystemExit):
        main(["demo", "--ties", "random"])
