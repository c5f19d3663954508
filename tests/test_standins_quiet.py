"""Stand-ins in a user's CI (issue 45): installed and loaded with nothing on stdout/stderr but progress bars (the
silencing scoped to stand-ins: a real checkpoint's messages are kept), and every generating family counting the
answers it could not parse and warning once per run, in the same words."""
import logging
import os
import shutil

import pandas as pd

import pyterrier_instruct as pti
from pyterrier_instruct import _hub, testing

FRAME = pd.DataFrame({"qid": "1", "query": "dam fish", "instruction": "salmon only",
                      "docno": [f"d{i}" for i in range(6)],
                      "text": ["Dams block salmon migration.", "Coral reefs bleach in warm water.",
                               "Salmon swim upstream.", "Vaccines train immunity.",
                               "Fish ladders help salmon past dams.", "Rivers carry silt."],
                      "score": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0], "rank": list(range(6))})


def _noise(text: str) -> list:
    """The lines of ``text`` that are not a progress bar (tqdm's ``…%|…|`` lines, carriage-return updates)."""
    return [line for line in text.replace("\r", "\n").splitlines() if line.strip() and "%|" not in line]


def test_install_prints_nothing_but_progress(tmp_path, capfd):
    testing.install_models(tmp_path, ["sentence-transformers/all-MiniLM-L6-v2"])  # the WordPiece trainer
    testing.install_models(tmp_path, ["castorini/monot5-base-msmarco-10k"])  # sentencepiece's trainer
    out, err = capfd.readouterr()
    assert out == "" and _noise(err) == []  # before: three empty lines on stdout


def test_a_stand_in_loads_quietly_and_a_real_checkpoint_keeps_its_messages(standin_models, tmp_path, capfd, caplog):
    import transformers
    base = standin_models / "meta-llama/Llama-2-7b-hf"  # a causal checkpoint loaded without its head (a dense encoder)
    unmarked = tmp_path / "llama"
    shutil.copytree(base, unmarked, ignore=shutil.ignore_patterns(_hub.STAND_IN_MARKER))
    long = " ".join(["salmon migration past the dam"] * 2000)
    with caplog.at_level(logging.WARNING):
        _hub.from_pretrained(transformers.AutoModel, str(base))
        _hub.from_pretrained(transformers.AutoTokenizer, str(base))(long)
        quiet = capfd.readouterr().err + caplog.text
        caplog.clear()
        _hub.from_pretrained(transformers.AutoModel, str(unmarked))
        _hub.from_pretrained(transformers.AutoTokenizer, str(unmarked))(long)
        loud = capfd.readouterr().err + caplog.text
    assert "LOAD REPORT" not in quiet and "Token indices sequence length" not in quiet and _noise(quiet) == []
    assert "LOAD REPORT" in loud and "Token indices sequence length" in loud  # only the stand-in was silenced
    assert logging.getLogger("transformers").level != logging.ERROR  # the silencing ended with the call


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "answers" in r.getMessage()]


def test_rank_r1_stand_in_loads_quietly_and_its_garbage_is_counted_in_one_warning(standin_models, monkeypatch, capfd,
                                                                                   caplog):
    monkeypatch.setenv(_hub.MODELS_ENV, str(standin_models))
    model = pti.RankR1(num_child=2, k=2, max_output_tokens=4, verbose=False)
    with caplog.at_level(logging.WARNING):
        model(FRAME)
    err = capfd.readouterr().err
    assert "Found missing adapter keys" not in err and _noise(err) == []  # before: peft's ~1,500 characters
    n = model.stats["generations"]
    assert n > 1 and model.stats["invalid"] == n  # the stand-in answers at once, with nothing: every answer unparsed
    assert _warnings(caplog) == [f"{model!r}: {n} of {n} answers held no <answer> naming a shown passage; such an "
                                 "answer casts no vote; a comparison without votes goes to its first passage "
                                 "(see .stats)"]


def test_setwise_counts_unparsed_answers_in_one_warning(standin_models, monkeypatch, caplog):
    monkeypatch.setenv(_hub.MODELS_ENV, str(standin_models))
    model = pti.Setwise(num_child=2, k=3, verbose=False)  # the Flan-T5 stand-in, random: few labels among its answers
    with caplog.at_level(logging.WARNING):
        model(FRAME)
    bad, asked = model.stats["invalid"], model.stats["comparisons_asked"]
    assert bad > 0  # before: 220 of 220 unparsed, and no warning
    assert _warnings(caplog) == [f"{model!r}: {bad} of {asked} answers named no passage label; the comparison's first "
                                 "passage was taken as the winner (see .stats)"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        model(FRAME)  # once per run: a second run warns again, with its own count
    assert len(_warnings(caplog)) == 1 and model.stats["invalid"] == 2 * bad


def test_listwise_warns_alike(caplog):
    from pyterrier_instruct.listwise import ListwiseReranker
    model = ListwiseReranker(lambda prompts, n: ["no idea"] * len(prompts))
    with caplog.at_level(logging.WARNING):
        model(FRAME)
    assert _warnings(caplog) == [f"{model!r}: 1 of 1 answers were not a clean permutation; repaired: duplicates and "
                                 "out-of-range labels dropped, missing passages appended in order (see .stats)"]


def test_install_puts_torch_on_one_thread_unless_told_otherwise(tmp_path, monkeypatch):
    import torch
    threads = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        testing.install(tmp_path, models=[], datasets=False)
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
        torch.set_num_threads(threads)
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        testing.install(tmp_path, models=[], datasets=False)
        assert torch.get_num_threads() == threads  # the user's setting stands
    finally:
        torch.set_num_threads(threads)
