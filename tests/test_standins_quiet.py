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


def test_ifir_judge_warns_alike(caplog):
    from pyterrier_instruct.backends import FunctionBackend, Generation
    from pyterrier_instruct.evaluation import IFIRJudge
    from pyterrier_instruct.evaluation.judge import JudgeItem

    def judge_answers(message_lists, **kwargs):  # garbage about vaccines and rivers, {"score": 2} otherwise
        garbage = [any(w in m[-1]["content"] for w in ("Vaccines", "Rivers")) for m in message_lists]
        clean = ['{"', "score", '":', " ", "2", "}"]
        return [Generation.of("no idea", ["no", " idea"], [{"no": 0.0}, {" idea": 0.0}]) if g
                else Generation.of("".join(clean), clean, [{t: 0.0} for t in clean]) for g in garbage]

    items = [JudgeItem("fiqa1", "salmon only", d, t) for d, t in zip(FRAME["docno"], FRAME["text"])]
    judge = IFIRJudge(FunctionBackend(logprobs=judge_answers), judge_model="garbler", batch_size=2, verbose=False)
    with caplog.at_level(logging.WARNING):
        got = judge.judge(items)
    assert [j.status for j in got] == ["ok", "ok", "ok", "unparsed", "ok", "unparsed"]
    assert judge.last["backend_calls"] == 3 and judge.last["unparsed"] == 2  # three calls, one warning for the run
    assert _warnings(caplog) == ["INSTFOL judge garbler: 2 of 6 answers held no score; scored 0 (see .stats)"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        judge.judge([i for i in items if "Vaccines" not in i.text and "Rivers" not in i.text] + [items[0]._replace(
            instruction="coral only")])
    assert judge.last["unparsed"] == 0 and judge.last["judged"] == 1 and _warnings(caplog) == []


def test_install_puts_torch_on_one_thread_unless_told_otherwise(tmp_path, monkeypatch):
    import torch
    original, threads = torch.get_num_threads(), 2  # the tests' own processes run on one (tests/conftest.py)
    torch.set_num_threads(threads)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        testing.install(tmp_path, models=[], datasets=False)
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
        torch.set_num_threads(threads)
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        testing.install(tmp_path, models=[], datasets=False)
        assert torch.get_num_threads() == threads  # the user's setting stands
    finally:
        torch.set_num_threads(original)
