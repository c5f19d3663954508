"""What a new user meets first: a hub that cannot be reached, a local model folder that is not there, the download
command the messages suggest, and the CLI's one-line errors (issue 29)."""
import sys
from pathlib import Path

import pytest

import pyterrier_instruct as pti
from pyterrier_instruct import _hub
from pyterrier_instruct.datasets import DataError
from pyterrier_instruct.datasets import source


def _closed_port() -> int:
    import socket
    with socket.socket() as s:  # a loopback port nothing listens on: connections are refused at once
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def unreachable_hub(monkeypatch, tmp_path):
    """Online (HF_HUB_OFFLINE unset) with a hub endpoint that refuses connections, no proxy, empty caches."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    for var in _hub._PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(tmp_path / "models"))
    return tmp_path


def test_an_unreachable_hub_is_one_data_error_naming_path_and_the_data_root(unreachable_hub, monkeypatch):
    monkeypatch.setattr(source, "_download",
                        lambda entry: pytest.fail("no download is tried when the hub cannot be reached"))
    with pytest.raises(DataError) as err:
        pti.load_dataset("followir/robust04").get_topics()
    text = str(err.value)
    assert err.value.__cause__ is None and err.value.__context__ is None or err.value.__suppress_context__
    assert "the download of jhu-clsp/robust04-instructions failed (ConnectionError: http://127.0.0.1:" in text
    assert "cannot be reached (ConnectionRefusedError" in text
    assert "path=<folder>" in text and "PYTERRIER_INSTRUCT_DATA" in text and "HF_HUB_OFFLINE=1" in text


def test_a_failing_download_is_one_data_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("PYTERRIER_INSTRUCT_DATA", str(tmp_path))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(_hub, "hub_unreachable", lambda timeout=3.0: None)
    monkeypatch.setattr(source, "hub_unreachable", lambda timeout=3.0: None)

    def fails(entry):
        raise RuntimeError("500 Server Error: Internal Server Error for url: https://huggingface.co/api/datasets/x")

    monkeypatch.setattr(source, "_download", fails)
    with pytest.raises(DataError,
                       match=r"the download of jhu-clsp/robust04-instructions failed \(RuntimeError: 500 Server"):
        pti.load_dataset("followir/robust04").get_topics()


def test_an_unreachable_hub_fails_a_model_at_once_with_the_fixes(unreachable_hub):
    import pandas as pd
    frame = pd.DataFrame({"qid": ["1"], "query": ["q"], "docno": ["d"], "text": ["t"]})
    with pytest.raises(_hub.ModelNotFoundError) as err:
        pti.MonoT5("org/not-cached")(frame)
    text = str(err.value)
    assert "huggingface.co cannot be reached (http://127.0.0.1:" in text and "set HF_HUB_OFFLINE=1" in text
    assert "hf download org/not-cached" in text


def test_the_suggested_command_is_the_installed_one(monkeypatch):
    from importlib import metadata
    installed = Path(sys.executable).parent   # the environment's scripts (hf, huggingface-cli) sit next to python
    assert (installed / _hub.hub_cli()).exists(), sorted(p.name for p in installed.glob("h*"))
    monkeypatch.setattr(metadata, "version", lambda dist: "0.30.2")
    assert _hub.hub_cli() == "huggingface-cli" and _hub.login_command() == "huggingface-cli login"
    monkeypatch.setattr(metadata, "version", lambda dist: "1.1.0")
    assert _hub.hub_cli() == "hf" and _hub.login_command() == "hf auth login"


@pytest.mark.parametrize("name", ["./models/no-such-folder", "/no/such/folder", "~/no-such-folder", "models/a/b"])
def test_a_path_that_is_not_there_is_a_missing_folder_not_a_hub_id(name, monkeypatch, tmp_path):
    import pandas as pd
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(tmp_path))
    frame = pd.DataFrame({"qid": ["1"], "query": ["q"], "docno": ["d"], "text": ["t"]})
    with pytest.raises(_hub.ModelNotFoundError) as err:
        pti.MonoT5(name)(frame)
    text = str(err.value)
    assert text.startswith(f"cannot load the model {name!r}: the local folder ") and "does not exist" in text
    assert "PYTERRIER_INSTRUCT_MODELS" not in text and "download" not in text


def test_hub_ids_are_not_paths():
    assert not any(_hub.is_path(n) for n in ["castorini/monot5-base-msmarco-10k", "t5-small", "jhu-clsp/FollowIR-7B"])


@pytest.mark.parametrize("args,expected", [
    (["--dataset", "followir/robust4"],
     "'followir/robust4' is not a known dataset id; did you mean 'followir/robust04'"),
    (["--dataset", "followir/robust04", "--path", "/nope"], "followir/robust04: the data folder /nope does not exist"),
])
def test_cli_data_errors_are_one_line_and_exit_2(args, expected, capsys, tmp_path):
    from pyterrier_instruct.reproduce.cli import main
    assert main(["followir", *args, "--systems", "bm25", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pyterrier-instruct followir: error: ") and expected in err and "\n" not in err, err


def test_measures_by_name_in_pt_experiment(mini):
    from ir_measures import AP, nDCG
    import pyterrier as pt
    system = mini.candidates() >> pti.PoolBM25(verbose=False)
    topics, qrels = mini.get_topics(), mini.get_qrels()
    named = pt.Experiment([system], topics, qrels, ["pMRR", "nDCG@10", "OG(AP@1000)"])
    objects = pt.Experiment([system], topics, qrels, [pti.pMRR, nDCG @ 10, pti.OG(AP @ 1000)])
    assert list(named.columns) == list(objects.columns) == ["name", "pMRR", "nDCG@10", "OG(AP@1000)"]
    assert named.iloc[:, 1:].values.tolist() == objects.iloc[:, 1:].values.tolist()
    with pytest.raises(ValueError, match="unknown measure 'pMRRR': neither an ir_measures name"):
        pt.Experiment([system], topics, qrels, ["pMRR", "pMRRR"])
    # without a measure of the package, names are PyTerrier's (its own error, byte for byte: tests/test_pt_inert.py),
    # but for a misspelled name of the package's, which gets the name meant (issue 45; tests/test_messages.py)
    with pytest.raises(ValueError, match="unknown measure 'pMRRR': .*; did you mean 'pMRR'"):
        pt.Experiment([system], topics, qrels, ["pMRRR"])
    with pytest.raises(ValueError, match="unkonwn measure nDGC@10"):
        pt.Experiment([system], topics, qrels, ["nDGC@10"])


def test_a_typo_in_a_wrapped_measure_names_it():
    with pytest.raises(ValueError,
                       match=r"OG\('AP@100O'\): 'AP@100O' is not a measure ir_measures can read .*letter O"):
        pti.OG("AP@100O")
    assert pti.OG("AP@1000") == pti.OG(__import__("ir_measures").AP @ 1000)


def test_progress_bars_are_tqdm_auto_unless_the_user_chose_a_type(monkeypatch, mini):
    """In a notebook ``tqdm.auto`` is the widget bar, in a terminal the text bar; ``pt.utils.set_tqdm`` still wins."""
    import pyterrier as pt
    import tqdm.auto
    from tqdm import std
    from pyterrier_instruct._progress import tqdm as progress_bar
    made = []

    class Widget(std.tqdm):
        def __init__(self, *args, **kwargs):
            made.append(kwargs.get("desc"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(pt, "tqdm", std.tqdm)
    monkeypatch.setattr(tqdm.auto, "tqdm", Widget)
    pti.PoolBM25()(mini.candidates()(mini.get_topics().iloc[:2]))
    assert made == ["PoolBM25"]
    monkeypatch.setattr(pt, "tqdm", lambda *a, **k: made.append("chosen") or std.tqdm(*a, **k))
    progress_bar(range(2), desc="x", disable=True)
    assert made == ["PoolBM25", "chosen"]


def test_reused_saved_runs_raise_no_missing_instruction_alarm(mini, tmp_path):
    """A run read back from ``save_dir`` (TREC files keep no topic columns) is not a run blind to the instructions."""
    import warnings
    import pyterrier as pt
    system = mini.candidates() >> pti.PoolBM25(verbose=False)
    topics, qrels = mini.get_topics(), mini.get_qrels()
    for attempt in ("fresh", "reused"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pt.Experiment([system], topics, qrels, ["pMRR"], names=["pool » PoolBM25"], save_dir=str(tmp_path),
                          save_mode="reuse")
        assert not [w for w in caught if "no 'instruction' column" in str(w.message)], attempt
    assert (tmp_path / "pool » PoolBM25.res.gz").exists()
    without = system >> pt.apply.generic(lambda df: df.drop(columns=["instruction"]))
    with pytest.warns(UserWarning, match="no 'instruction' column"):  # a fresh run without the column still warns
        pt.Experiment([without], topics, qrels, ["pMRR"])


def test_an_empty_folder_for_an_original_layout_id_names_that_layout(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError) as err:
        pti.load_dataset("followir/robust04", path=str(tmp_path / "empty")).get_topics()
    text = str(err.value)
    assert "expected the original FollowIR layout" in text and "mteb layout" not in text.split("missing:")[0]
    assert ("missing: queries.jsonl, corpus.jsonl, qrels_og/test.jsonl, qrels_changed/test.jsonl, "
            "top_ranked.jsonl") in text
    with pytest.raises(DataError, match=r"missing config folder .*queries \(mteb layout"):  # the mteb id names its own
        pti.load_dataset("followir/robust04/mteb", path=str(tmp_path / "empty")).get_topics()


def test_data_md_names_every_file_of_the_original_followir_layout():
    page = (Path(__file__).parents[1] / "docs" / "data.md").read_text(encoding="utf-8")
    from pyterrier_instruct.datasets.followir import ORIGINAL_FILES
    assert all(f"`{name}`" in page or f"`{name}` (or" in page for name in ORIGINAL_FILES)
    assert "`qid`, `pid`" in page


def test_cli_rows_are_labelled_by_the_checkpoint_used():
    import argparse
    from pyterrier_instruct.reproduce.arguments import Row
    from pyterrier_instruct.reproduce.systems import row_name
    rows = {"monot5-base": Row("MonoT5-base", "MonoT5-base", "castorini/monot5-base-msmarco-10k"),
            "bm25": Row("BM25", "BM25")}
    default = argparse.Namespace(models={"monot5-base": "castorini/monot5-base-msmarco-10k"})
    assert row_name(rows, "monot5-base", default) == "MonoT5-base" and row_name(rows, "bm25", default) == "BM25"
    own = argparse.Namespace(models={"monot5-base": "./checkpoints/my-monot5/"})
    assert row_name(rows, "monot5-base", own) == "MonoT5-base [my-monot5]"
    other = argparse.Namespace(models={"monot5-base": "castorini/monot5-large-msmarco"})
    assert row_name(rows, "monot5-base", other) == "MonoT5-base [castorini/monot5-large-msmarco]"
