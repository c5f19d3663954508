"""The reproduction pipelines (pyterrier_instruct.reproduce) behind the console entry point: every command's --help, one
small run each on fixtures in the official layouts with every table row wired to a tiny random model (or a local HTTP
stand-in for the API rows), resumable runs, and the shared pieces (SavedRun, PerDataset, the paper rows)."""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest
from stubs import ZEPHYR_TEMPLATE, ChatServer, with_chat_template

import pyterrier_instruct as pti
from pyterrier_instruct.reproduce.cli import COMMANDS, main

ROOT = Path(__file__).parents[1]
LAYOUTS = Path(os.environ["PYTERRIER_INSTRUCT_DATA"])  # written by conftest.py
ROBUST04 = str(LAYOUTS / "jhu-clsp" / "robust04-instructions")


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny):
    """Local folders standing in for every checkpoint of the tables: T5 (monoT5), Mistral (true/false rerankers, E5),
    a Zephyr-templated Mistral (listwise), and a LoRA adapter over a tiny Llama (Promptriever/RepLLaMA)."""
    import peft
    import torch
    import transformers
    root = tmp_path_factory.mktemp("pipeline-models")
    llama = tiny["llama"]
    torch.manual_seed(1)
    adapter = peft.get_peft_model(transformers.AutoModel.from_pretrained(llama),
                                  peft.LoraConfig(r=4, lora_alpha=8, init_lora_weights=False,
                                                  target_modules=["q_proj", "v_proj"]))
    adapter.save_pretrained(str(root / "adapter"))
    return {"t5": tiny["t5"], "mistral": tiny["mistral"], "adapter": str(root / "adapter"),
            "zephyr": with_chat_template(tiny["mistral"], root / "zephyr", ZEPHYR_TEMPLATE)}


def run(*argv):
    assert main(list(argv)) == 0


# -- the command line ------------------------------------------------------------------------------------------------
def test_console_entry_point_lists_every_command(capsys):
    """The suite's one console-script smoke test: the installed ``pyterrier-instruct`` (``python -m
    pyterrier_instruct.reproduce.cli`` where the installed script is not this tree's) prints the help that ``main``
    prints here, which lists every command."""
    import importlib.metadata
    import tomllib
    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["pyterrier-instruct"]
    assert target == "pyterrier_instruct.reproduce.cli:main"
    try:
        code = main(["--help"])
    except SystemExit as e:
        code = e.code
    assert code == 0
    text = capsys.readouterr().out
    for command in COMMANDS:
        assert re.search(rf"^  {re.escape(command)} +\S", text, re.M), command
    installed = {e.name: e.value for e in importlib.metadata.entry_points(group="console_scripts")}
    script = Path(sys.executable).with_name("pyterrier-instruct")
    current = installed.get("pyterrier-instruct") == target and script.exists()  # pip install -e . of this tree
    argv = [str(script)] if current else [sys.executable, "-m", "pyterrier_instruct.reproduce.cli"]
    out = subprocess.run([*argv, "--help"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0 and out.stdout == text
    assert main([]) == 2 and main(["nope"]) == 2


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_newcomer_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: pyterrier-instruct {command}" in text and "examples:" in text and "--out" in text
    if command != "demo":
        module = __import__(f"pyterrier_instruct.reproduce.{COMMANDS[command][0]}", fromlist=["ROWS"])
        for flag in ("--dataset", "--path", "--data-root", "--systems", "--device", "--batch-size", "--quiet"):
            assert flag in text
        for key, row in module.ROWS.items():
            assert key in text and (row.model is None or f"--{key} MODEL" in text)


def test_pipelines_run_as_modules(monkeypatch, capsys):
    import runpy
    monkeypatch.setattr(sys, "argv", ["followir", "--help"])
    with pytest.raises(SystemExit) as exit_:  # python -m pyterrier_instruct.reproduce.followir --help
        runpy.run_module("pyterrier_instruct.reproduce.followir", run_name="__main__", alter_sys=True)
    assert exit_.value.code == 0 and "FollowIR Table 2" in capsys.readouterr().out


def test_bad_arguments_are_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["followir", "--systems", "bm25,monot5-xl", "--out", str(tmp_path)])
    assert "--systems: unknown row(s) ['monot5-xl']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["followir", "--dataset", "instruct-mini", "--dataset", "followir/robust04", "--path", ROBUST04])
    assert "--path: give one per --dataset (2 datasets, 1 paths" in capsys.readouterr().err
    with pytest.raises(SystemExit,
                       match=r"not available locally: MonoT5-3B \(castorini/monot5-3b-msmarco-10k\).*--monot5-3b DIR"):
        main(["followir", "--dataset", "instruct-mini", "--systems", "bm25,monot5-3b", "--out", str(tmp_path)])
    assert not (tmp_path / "runs").exists()  # failed before any work


# -- one small run per pipeline ---------------------------------------------------------------------------------------
def test_followir_every_table2_row_then_resume(models, tmp_path, monkeypatch):
    out = tmp_path / "followir"
    m = models
    argv = ["followir", "--dataset", "followir/robust04", "--path", ROBUST04, "--out", str(out), "--quiet",
            "--monot5-base", m["t5"], "--monot5-3b", m["t5"], "--followir-7b", m["mistral"], "--mistral", m["mistral"],
            "--promptriever", m["adapter"], "--repllama", m["adapter"], "--e5-mistral", m["mistral"], "--rank-zephyr",
            m["zephyr"]]
    run(*argv)
    table = pd.read_csv(out / "table2.csv")
    # rows are labelled by the checkpoint used: a local folder other than the paper's model shows its name, and weights
    # that record no snapshot commit (these tiny folders) say so in the row
    assert table["Model"].tolist() == [
        "BM25 (pool)", "MonoT5-base [t5, unrevisioned]", "MonoT5-3B [t5, unrevisioned]",
        "FollowIR-7B [mistral, unrevisioned]", "Mistral-7B-instruct [mistral, unrevisioned]",
        "Promptriever [adapter, unrevisioned]", "RepLLaMA [adapter, unrevisioned]",
        "E5-mistral [mistral, unrevisioned]", "RankZephyr [zephyr, unrevisioned]"]
    assert table.columns.tolist() == ["Model", "robust04 MAP@1000", "robust04 p-MRR"]
    # the pipeline is the public API composed: its BM25 row is what followir_report gives directly
    ds = pti.load_dataset("followir/robust04", path=ROBUST04)
    direct = pti.followir_report({"BM25 (pool)": ds.candidates() >> pti.PoolBM25()}, {"robust04": ds})
    assert table.iloc[0, 1:].tolist() == direct.iloc[0, 1:].tolist()
    # every row the papers report gets the published cells and the difference below it (RankZephyr is not in Table 2)
    paper = pd.read_csv(out / "table2.paper.csv")
    assert "  paper: BM25 (FollowIR)" in set(paper["Model"])
    assert "  paper: Promptriever (Promptriever)" in set(paper["Model"])
    i = paper.index[paper["Model"] == "  paper: MonoT5-base (FollowIR)"][0]
    assert paper.loc[i, "robust04 MAP@1000"] == 15.7 and paper.loc[i + 1, "Model"] == "  Δ ours − paper"
    assert paper.loc[i + 1, "robust04 MAP@1000"] == round(table.loc[1, "robust04 MAP@1000"] - 15.7, 1)
    assert not any("RankZephyr" in s for s in paper["Model"] if s.startswith("  paper"))
    report = json.loads((out / "report.json").read_text())
    assert report["command"] == "pyterrier-instruct " + " ".join(argv)
    assert report["systems"]["MonoT5-base [t5, unrevisioned]"] == m["t5"]
    assert report["tables"]["table2"]["paper_rows"]["BM25 (pool)"] == "BM25"
    saved = sorted(p.parent.name for p in (out / "runs" / "robust04").glob("*/*.parquet"))
    assert saved == sorted(["bm25", "monot5-base", "monot5-3b", "followir-7b", "mistral", "promptriever", "repllama",
                            "e5-mistral", "rank-zephyr"])
    trec = next((out / "runs" / "robust04" / "monot5-base").glob("*.trec")).read_text().splitlines()
    assert len(trec[0].split()) == 6 and trec[0].split()[1] == "Q0"

    # a re-run reuses every saved run: nothing is recomputed
    def refuse(self, topics, paths):
        raise AssertionError(f"{self.system!r} was recomputed")
    monkeypatch.setattr(pti.SavedRun, "_compute", refuse)
    (out / "table2.csv").unlink()
    run(*argv)
    assert pd.read_csv(out / "table2.csv").equals(table)


def rank_gpt_answer(body):
    return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "[2] > [1]"},
                              "finish_reason": "stop"}]}


def test_infosearch_tables_2_and_3_with_an_api_row(models, tmp_path, monkeypatch):
    server = ChatServer(rank_gpt_answer)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    try:
        run("infosearch", "--dataset", "infosearch/format", "--path", str(LAYOUTS / "jianqunZ" / "Format-v1"),
            "--dataset", "infosearch/audience", "--path", str(LAYOUTS / "jianqunZ" / "Audience-v1"),
            "--systems", "bm25,mistral,rank-zephyr,gpt-4o", "--mistral", models["mistral"], "--rank-zephyr",
            models["zephyr"], "--gpt-4o", "gpt-4o", "--openai-base-url", server.url, "--out", str(tmp_path), "--quiet")
    finally:
        server.close()
    assert server.requests and server.requests[0]["auth"] == "Bearer sk-test"
    t2, t3 = pd.read_csv(tmp_path / "table2.csv"), pd.read_csv(tmp_path / "table3.csv")
    assert t2["Model"].tolist() == \
        ["BM25 (pool)", "Mistral-7B-instruct-v0.2 [mistral, unrevisioned]", "RankZephyr [zephyr, unrevisioned]",
         "GPT-4o (RankGPT)"]
    assert {"Avg nDCG@10/og", "Avg p-MRR", "Avg WISE", "Avg SICR", "Avg R_og"} <= set(t2.columns)
    assert t3.columns.tolist() == \
        ["Model", "format WISE", "audience WISE", "format SICR", "audience SICR", "Avg WISE", "Avg SICR"]
    for x, a, b in zip(t3["Avg WISE"], t3["format WISE"], t3["audience WISE"]):  # the mean of the raw values, rounded
        assert abs(x - (a + b) / 2) <= 0.051
    paper = pd.read_csv(tmp_path / "table3.paper.csv")
    assert "  paper: GPT-4o (InfoSearch)" in set(paper["Model"])
    assert json.loads((tmp_path / "report.json").read_text())["tables"].keys() == {"table2", "table3"}


def judge_answer(body):
    """An INSTFOL judge on an OpenAI-compatible server: a JSON answer whose score token carries top logprobs."""
    score = str(len(body["messages"][-1]["content"]) % 4)
    tokens = ['{"', "score", '":', " ", score, "}"]
    entries = [{"token": t, "logprob": math.log(.7) if t == score else 0.0,
                "top_logprobs": ([{"token": score, "logprob": math.log(.7)},
                                  {"token": str((int(score) + 1) % 4), "logprob": math.log(.3)}]
                                 if t == score else [{"token": t, "logprob": 0.0}])} for t in tokens]
    return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(tokens)},
                              "finish_reason": "stop", "logprobs": {"content": entries}}]}


def test_ifir_dense_rows_and_the_instfol_judge_resume(models, tmp_path, monkeypatch):
    server = ChatServer(judge_answer)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = ["ifir", "--dataset", "ifir/fiqa", "--data-root", str(LAYOUTS / "songtingyu"), "--levels",
            "--promptriever", models["adapter"], "--e5-mistral", models["mistral"], "--judge", "gpt-4o-mini",
            "--judge-base-url", server.url, "--out", str(tmp_path), "--quiet"]
    monkeypatch.delenv("PYTERRIER_INSTRUCT_DATA", raising=False)
    try:
        run(*argv)
        assert "PYTERRIER_INSTRUCT_DATA" not in os.environ  # --data-root is used for locating only, not left behind
        first = len(server.requests)
        table = pd.read_csv(tmp_path / "table3.csv")
        run(*argv)
        assert len(server.requests) == first  # judgements and runs come from --out the second time
    finally:
        server.close()
    assert first > 0 and len(pti.CallStore(tmp_path / "judgements")) > 0
    assert table["Model"].tolist() == \
        ["BM25", "Promptriever-7B [adapter, unrevisioned]", "E5-mistral-7B [mistral, unrevisioned]"]
    assert {"fiqa nDCG@20", "fiqa MRR@20", "fiqa INSTFOL@20", "fiqa nDCG@20/level1"} <= set(table.columns)
    assert table["fiqa nDCG@20"].between(0, 1).all() and pd.read_csv(tmp_path / "table3.csv").equals(table)
    assert sorted(p.name for p in (tmp_path / "index" / "fiqa").iterdir() if p.suffix != ".lock") == \
        ["bm25", "e5-mistral", "promptriever"]


def test_instructir_every_row(models, tmp_path):
    m = models
    run("instructir", "--path", str(LAYOUTS / "kaist-ai" / "InstructIR"), "--depth", "5", "--promptriever",
        m["adapter"], "--repllama", m["adapter"], "--e5-mistral", m["mistral"], "--followir-7b", m["mistral"],
        "--mistral", m["mistral"], "--out", str(tmp_path), "--quiet")
    table = pd.read_csv(tmp_path / "instructir.csv")
    assert table.columns.tolist() == ["Model", "instructir nDCG@10", "instructir Robustness@10"]
    assert table["Model"].tolist() == \
        ["BM25", "Promptriever [adapter, unrevisioned]", "RepLLaMA [adapter, unrevisioned]",
         "E5-Mistral [mistral, unrevisioned]", "FollowIR-7B [mistral, unrevisioned]",
         "Mistral-7B-instruct [mistral, unrevisioned]"]
    assert (table["instructir Robustness@10"] <= table["instructir nDCG@10"] + 1e-9).all()  # worst instance ≤ mean
    paper = pd.read_csv(tmp_path / "instructir.paper.csv")
    assert paper.loc[paper["Model"] == "  paper: BM25 (Promptriever)", "instructir nDCG@10"].item() == 76.0
    with pytest.raises(SystemExit):
        main(["instructir", "--dataset", "instructir", "--dataset", "instructir", "--path", "-", "--path", "-"])


# -- the shared pieces -------------------------------------------------------------------------------------------------
@pytest.fixture
def mini_systems(mini):
    return {"BM25 (pool)": mini.candidates() >> pti.PoolBM25()}


def test_saved_run_is_exact_keyed_and_atomic(mini, tmp_path):
    calls = []
    pool = mini.candidates() >> pti.PoolBM25()

    def counted(topics):
        calls.append(len(topics))
        return pool(topics)
    system = pt.apply.generic(counted)
    saved = pti.SavedRun(system, tmp_path / "runs", key="counted-pool-bm25", verbose=False)  # pt.apply: named by key=
    topics = mini.get_topics()
    first = saved(topics)
    again = saved(topics)
    assert calls == [len(topics)]
    pd.testing.assert_frame_equal(first, again)
    direct = pool(topics)
    merged = first.merge(direct[["qid", "docno", "score"]], on=["qid", "docno"], suffixes=("", "_direct"))
    assert len(merged) == len(direct) and (merged["score"] == merged["score_direct"]).all()  # exact floats
    assert set(topics.columns) <= set(first.columns) and first["qid"].iloc[0] == topics["qid"].iloc[0]
    saved(topics.assign(instruction="another instruction"))  # other topics: another run
    assert calls == [len(topics), len(topics)] and len(list((tmp_path / "runs").glob("*.parquet"))) == 2
    assert not list((tmp_path / "runs").glob("*.partial"))
    empty = saved(topics.head(0))
    assert empty.empty and {"qid", "docno", "score", "rank"} <= set(empty.columns) and len(calls) == 2
    with pytest.raises(ValueError, match="returned no \\['docno', 'score'\\] column"):
        pti.SavedRun(pt.apply.generic(lambda t: t), tmp_path / "bad", key="identity")(topics)


def test_per_dataset_systems_must_cover_every_dataset_with_the_same_names(mini, mini_systems):
    with pytest.raises(ValueError, match="PerDataset has no systems for dataset\\(s\\) \\['b'\\]"):
        pti.followir_report(pti.PerDataset({"a": mini_systems}), {"a": mini, "b": mini})
    with pytest.raises(ValueError, match="the systems of 'b' are named"):
        pti.followir_report(pti.PerDataset({"a": mini_systems, "b": {"other": mini.candidates() >> pti.PoolBM25()}}),
                            {"a": mini, "b": mini})
    both = pti.followir_report(pti.PerDataset({"a": mini_systems, "b": mini_systems}), {"a": mini, "b": mini})
    assert both["a MAP@1000"].tolist() == both["b MAP@1000"].tolist()


BEIR_SCIFACT = str(LAYOUTS / "BeIR" / "scifact")


def test_beir_prompt_study_selected_is_the_dev_argmax_and_best_the_test_max(models, tmp_path):
    run("beir-prompts", "--dataset", "beir/scifact", "--data-root", str(LAYOUTS / "BeIR"), "--systems",
        "bm25,promptriever", "--promptriever", models["adapter"], "--out", str(tmp_path), "--quiet")
    table = pd.read_csv(tmp_path / "table3.csv")
    assert table.columns.tolist() == \
        ["Model", "scifact nDCG@10/none", "scifact nDCG@10/selected", "scifact nDCG@10/best"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["tables"]["table3"]["provenance"]["scifact"]["path"].endswith("BeIR/scifact")
    prompts = pd.read_csv(tmp_path / "prompts.csv")
    assert prompts["text"].tolist()[:10] == list(pti.BEIR_PROMPTS)
    for i, name in enumerate(["BM25", "Promptriever [adapter, unrevisioned]"]):  # rows labelled by the checkpoint used
        mine = prompts[prompts["model"] == name].reset_index(drop=True)
        assert len(mine) == 10 and mine["dev"].notna().all()
        selected = int(mine["dev"].to_numpy().argmax())  # the first maximum: the lowest prompt number on ties
        assert table.loc[i, "scifact nDCG@10/selected"] == round(100 * mine.loc[selected, "test"], 1)
        assert table.loc[i, "scifact nDCG@10/best"] == round(100 * mine["test"].max(), 1)
    # the no-prompt cell is plain BM25 on the query, as pt.Experiment computes it
    ds = pti.load_dataset("beir/scifact", path=BEIR_SCIFACT)
    plain = pt.Experiment([pti.BM25(ds.get_corpus_iter())], ds.get_topics(), ds.get_qrels(), [pt.measures.nDCG @ 10])
    assert table.loc[0, "scifact nDCG@10/none"] == round(100 * plain["nDCG@10"].iloc[0], 1)
    assert "  paper: BM25 (Promptriever)" in set(pd.read_csv(tmp_path / "table3.paper.csv")["Model"])


def test_prompt_study_without_a_dev_split_has_no_selected_cell_and_drops_self_hits(tmp_path):
    ds = pti.load_dataset("beir/scifact", path=BEIR_SCIFACT)

    relevant = ds.get_qrels().groupby("qid")["docno"].apply(list)

    # retrieves each query's own id first (as on ArguAna, where queries are documents), then its relevant docs
    def echo(topics):
        rows = [(q, d, float(10 - r)) for q in topics["qid"] for r, d in enumerate([q] + relevant[q])]
        return pd.DataFrame(rows, columns=["qid", "docno", "score"])
    table = pti.prompt_study_report({"echo": pt.apply.generic(echo)}, {"scifact": ds}, prompts=["a", "b"])
    assert [c for c in table.columns if c != "Model"] == ["scifact nDCG@10/none", "scifact nDCG@10/best"]
    assert table["scifact nDCG@10/none"].iloc[0] == 100.0  # the self hit is dropped: every relevant doc on top
    kept = pti.prompt_study_report({"echo": pt.apply.generic(echo)}, {"scifact": ds}, prompts=["a"],
                                   ignore_identical_ids=False)
    assert kept["scifact nDCG@10/none"].iloc[0] < 100.0
    assert table.attrs["settings"]["ignore_identical_ids"] and not kept.attrs["settings"]["ignore_identical_ids"]
    with pytest.raises(ValueError, match="dev has dataset\\(s\\) \\['fiqa'\\]"):
        pti.prompt_study_report({"echo": pt.apply.generic(echo)}, {"scifact": ds}, {"fiqa": ds})
