"""Messages that point at the real problem (issue 38): a dataset id written with ``:``, one-sided topics behind a paired
measure, the presets ``help()`` shows, and no scipy warning for a t-test on constant differences. Issue 45: a misspelled
measure name, a plain pyterrier-caching cache with paired topics, topics without instructions, a first stage without
text, a missing ``save_dir``, and the pipelines' options."""
import ast
import os
import pydoc
import re
import subprocess
import sys
import warnings
from pathlib import Path

import ir_datasets
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from scipy import stats

import pyterrier_instruct as pti
from pyterrier_instruct._pt_compat import _paired_p_value
from pyterrier_instruct.datasets import UnknownDatasetError


@pytest.mark.parametrize("load, name, suggestion", [
    (pti.load_dataset, "instruct:mini", "'instruct-mini'"),  # before: no suggestion ('mini' after the prefix)
    (pti.load_dataset, "robust4", "'followir/robust04'"),    # the ids' last part: before, no suggestion
    (pt.get_dataset, "instruct:mini", "'instruct:instruct-mini'"),
    (ir_datasets.load, "instruct/mini", "'instruct/instruct-mini'"),
])
def test_unknown_ids_get_the_id_meant(load, name, suggestion):
    with pytest.raises(UnknownDatasetError, match=rf"^'{name}' is not a known dataset id; did you mean {suggestion}"):
        load(name)


def test_one_sided_topics_are_named_not_the_qrels(mini):
    with pytest.raises(ValueError,
                       match=r"^pMRR needs the topics of every variant it compares \(og, changed\): the topics "
                             r"given to pt.Experiment have variants \['og'\] only, no '<qid>-changed' "
                             r"query; pass all the variants' topics, e.g. ds.get_topics\(\) rather than "
                             r"ds.get_topics\('og'\)"):
        pt.Experiment([mini.candidates()], mini.get_topics("og"), mini.get_qrels(), [pti.pMRR])
    with pytest.raises(ValueError, match=r"^pMRR needs paired qrels with '<qid>-og' and '<qid>-changed' query ids .*"
                                         r"found variants \['og'\]"):  # the qrels are the one-sided part here
        pt.Experiment([mini.candidates()], mini.get_topics(), mini.get_qrels("og"), [pti.pMRR])
    with pytest.raises(ValueError, match=r"^InfoSearch_pMRR needs the topics of every variant"):
        pt.Experiment([mini.candidates()], mini.get_topics("og"), mini.get_qrels(), [pti.InfoSearch_pMRR])


def test_help_lists_only_the_presets_that_work():
    text = pydoc.render_doc(pti.Qwen3Reranker, renderer=pydoc.plaintext)
    for refused in ("gritlm", "llama", "llama_chat", "mistral_instruct"):  # CausalLMReranker's: Qwen3Reranker refuses
        assert f" |  {refused}(" not in text and refused not in dir(pti.Qwen3Reranker)
        with pytest.raises(AttributeError, match="is a preset of CausalLMReranker"):
            getattr(pti.Qwen3Reranker, refused)
        assert refused in dir(pti.CausalLMReranker)
    assert {"four_b", "eight_b"} <= set(dir(pti.Qwen3Reranker)) and " |  four_b(" in text
    assert {"transform", "config", "__init__"} <= set(dir(pti.Qwen3Reranker))  # everything else is still listed


def test_t_test_on_constant_differences_gives_its_limit_without_a_warning():
    s, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _paired_p_value(stats.ttest_rel, s, b) == 0.0  # every query moved by the same amount: scipy's limit
        assert np.isnan(_paired_p_value(stats.ttest_rel, s, s))  # none moved: undefined
        assert np.isnan(_paired_p_value(stats.ttest_rel, s[:0], b[:0]))
    varied = np.array([1.5, 2.0, 3.2])
    assert _paired_p_value(stats.ttest_rel, varied, b) == stats.ttest_rel(varied, b).pvalue
    with pytest.warns(RuntimeWarning, match="Precision loss"):  # what pt.Experiment printed before
        stats.ttest_rel(s, b)


def test_experiment_with_a_constant_improvement_warns_nothing(mini):
    topics, qrels = mini.get_topics(), mini.get_qrels()
    base = mini.candidates()(topics)
    # the reversed candidate order: the same lists, so each paired query moves by a fixed amount, or not at all
    flipped = base.assign(score=lambda f: f["rank"].astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = pt.Experiment([base, flipped, flipped], topics, qrels, [pti.pMRR, pti.OG(pt.measures.AP @ 1000)],
                            names=["a", "b", "c"], baseline=1)
    assert isinstance(res, pd.DataFrame) and np.isnan(res.loc[2, "pMRR p-value"])


# -- issue 45: messages a newcomer met --
@pytest.mark.parametrize("measures, bad, meant", [
    (["pMMR", "nDCG@5"], "pMMR", "pMRR"),         # before: PyTerrier's bare "unkonwn measure pMMR"
    (["og(AP@1000)"], "og(AP@1000)", "OG(AP@1000)"),  # a package measure's wrapper, case off
    ([pti.pMRR, "nDGC@5"], "nDGC@5", "nDCG@5"),    # beside a package measure: any name gets the one meant
])
def test_a_misspelled_measure_name_gets_the_name_meant_before_any_system_runs(mini, measures, bad, meant):
    never = pt.apply.generic(lambda df: pytest.fail("a system ran") if len(df) else df)  # pt.inspect sees it empty
    expected = rf"^unknown measure {re.escape(repr(bad))}: .*; did you mean {re.escape(repr(meant))}\?"
    with pytest.raises(ValueError, match=expected):
        pt.Experiment([never], mini.get_topics(), mini.get_qrels(), measures, names=["never"])


def test_a_name_that_is_no_package_measure_keeps_pyterriers_own_error(mini):
    with pytest.raises(ValueError, match="^unkonwn measure nDGC@5$"):  # PyTerrier's, untouched
        pt.Experiment([mini.candidates()(mini.get_topics())], mini.get_topics(), mini.get_qrels(), ["nDGC@5"])


def test_a_plain_pyterrier_caching_cache_with_paired_topics_is_refused_before_any_system_runs(mini, tmp_path):
    """Before: a warning, then every system ran, and og and changed scored in one call ended in
    ``sqlite3.IntegrityError`` (78 s on FollowIR's Robust04); now nothing runs."""
    ptc = pytest.importorskip("pyterrier_caching")
    scored = []
    plain = ptc.ScorerCache(str(tmp_path / "plain"), pt.apply.score(lambda row: scored.append(row) or 1.0))
    with pytest.raises(ValueError, match=r"^pt.Experiment: the system 'cached' holds Sqlite3ScorerCache\(.*keys its "
                                         r"entries without the instruction.*sqlite3.IntegrityError.*refused before any "
                                         r"system runs. Use pti.ScorerCache\(path, scorer\)"):
        pt.Experiment([mini.candidates() >> plain], mini.get_topics(), mini.get_qrels(), [pti.pMRR], names=["cached"])
    assert scored == []


def test_without_package_measures_a_plain_cache_around_a_package_stage_is_refused_too(mini, tmp_path):
    ptc = pytest.importorskip("pyterrier_caching")
    from ir_measures import nDCG
    topics, qrels = mini.get_topics(), mini.get_qrels()
    ours = ptc.ScorerCache(str(tmp_path / "ours"), pti.MonoT5("never-loaded"))
    expected = (r"^pt.Experiment: the system 'monot5' holds Sqlite3ScorerCache\(.*MonoT5\('never-loaded'\)"
                r".*IntegrityError after all the scoring when scored together, "
                r"or get one cached score; refused before any system runs")
    with pytest.raises(ValueError, match=expected):
        pt.Experiment([mini.candidates() >> ours], topics, qrels, [nDCG @ 10], names=["monot5"])
    # around another package's stage, the experiment stays PyTerrier's and pyterrier-caching's own
    foreign = ptc.ScorerCache(str(tmp_path / "foreign"), pt.apply.score(lambda row: 1.0))
    with pytest.raises(Exception, match="UNIQUE constraint failed"):
        pt.Experiment([mini.candidates() >> foreign], topics, qrels, [nDCG @ 10], names=["foreign"])


def test_a_reranker_without_instructions_warns_once(mini):
    cands = mini.candidates()(mini.get_topics("og").iloc[:2])
    reranker = pti.PoolBM25(verbose=False)
    with pytest.warns(UserWarning) as caught:
        for batch in (cands.drop(columns="instruction"), cands.drop(columns="instruction")):  # a run in batches
            reranker(batch)
    assert [str(w.message) for w in caught if w.category is UserWarning] == [
        "PoolBM25: the input has no 'instruction' column and the stage no instruction= default, so every query is "
        "scored without an instruction; pass topics with an 'instruction' column (e.g. dataset.get_topics()), or set "
        "instruction='...' on the stage"]
    assert [w.filename for w in caught if w.category is UserWarning] == [__file__]  # the user's line, not PyTerrier's
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no 'instruction' column")
        pti.PoolBM25(verbose=False)(cands)  # the column there: no warning
        pti.PoolBM25(instruction="find dams", verbose=False)(cands.drop(columns="instruction"))  # a default: none


def test_the_missing_text_error_opens_with_the_fix(mini, mini_bm25):
    with pytest.raises(pti.MissingTextError) as err:
        (mini_bm25 % 2 >> pti.MonoT5("never-loaded"))(mini.get_topics("og").iloc[:1])
    message = str(err.value)
    assert message.startswith("The input has no 'text' column: a first stage such as BM25 returns docnos without the "
                              "document text. Add a text loader before this stage")
    assert "TransformerMode" not in message  # before: PyTerrier's [TransformerMode(missing_columns=...), ...] first
    assert message.endswith("(mode 'instruct' lacks ['text']; mode 'query' lacks ['text'])")


@pytest.mark.parametrize("measures", [[pti.pMRR], ["map"]])  # with the package's measures or without
def test_a_save_dir_that_does_not_exist_is_told_to_be_created(mini, tmp_path, measures):
    missing = str(tmp_path / "runs")
    with pytest.raises(ValueError) as err:
        pt.Experiment([mini.candidates()], mini.get_topics(), mini.get_qrels(), measures, names=["c"], save_dir=missing)
    assert type(err.value) is ValueError and str(err.value) == (  # PyTerrier's error, the fix added
        f"save_dir {missing} does not exist: create it first, e.g. os.makedirs({missing!r}, exist_ok=True) "
        "(pt.Experiment writes each system's run into save_dir but does not create the folder)")


def test_without_the_package_in_play_a_missing_save_dir_keeps_pyterriers_message(mini, tmp_path):
    missing, run = str(tmp_path / "runs"), mini.candidates()(mini.get_topics())
    with pytest.raises(ValueError) as err:  # a result frame and a standard measure: PyTerrier's call, unchanged
        pt.Experiment([pt.Transformer.from_df(run)], mini.get_topics(), mini.get_qrels(), ["map"], names=["c"],
                      save_dir=missing)
    assert str(err.value) == f"save_dir {missing} does not exist"


PIPELINES = sorted((Path(__file__).parents[1] / "pipelines").glob("*.py"))
#: the pipelines whose systems share a first stage (PyTerrier printed "Consider setting plan='tree'" and ran that stage
#: once per system); dense_prompts' and ifir's systems start differently (SetInstruction(prompt), FoldInstruction)
SHARED_PREFIX = {"bright", "followir", "infosearch", "listwise_vllm", "nevir"}


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.stem)
def test_pipeline_options_have_help_and_defaults_and_shared_prefixes_run_once(path):
    """Every option of a pipeline says what it is and, through ArgumentDefaultsHelpFormatter, its default (before:
    ``--monot5 MONOT5`` and nothing else); an experiment whose systems share a first stage runs with ``plan="tree"``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    options = [c for c in calls if c.func.attr == "add_argument"]
    assert options and [ast.unparse(c.args[0]) for c in options if "help" not in {k.arg for k in c.keywords}] == []
    parser = next(c for c in calls if c.func.attr == "ArgumentParser")
    formatter = ast.unparse(next(k.value for k in parser.keywords if k.arg == "formatter_class"))
    bases = {n.name: [ast.unparse(b) for b in n.bases] for n in tree.body if isinstance(n, ast.ClassDef)}
    assert "argparse.ArgumentDefaultsHelpFormatter" in [formatter] + bases.get(formatter, [])
    experiments = [c for c in calls if ast.unparse(c.func) == "pt.Experiment"]
    plans = {ast.unparse(k.value) for c in experiments for k in c.keywords if k.arg == "plan"}
    assert experiments and plans == ({"'tree'"} if path.stem in SHARED_PREFIX else set())


def test_pipeline_help_shows_the_defaults():
    done = subprocess.run([sys.executable, "pipelines/followir.py", "--help"], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).parents[1], env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr[-2000:]
    text = " ".join(done.stdout.split())
    assert "python pipelines/followir.py --standins" in text  # the description kept as written
    assert "--monot5 MONOT5 MonoT5's checkpoint (default: castorini/monot5-base-msmarco-10k)" in text
