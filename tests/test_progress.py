"""``verbose`` means one thing: this package's progress bars for work that takes time, on by default and silenced by
``verbose=False``. The bars and logs of the libraries underneath (transformers, vLLM, PISA, Anserini) have
their own switch, :func:`pyterrier_instruct.library_progress` (``$PYTERRIER_INSTRUCT_LIBRARY_BARS``)."""
from __future__ import annotations

import inspect
import sys

import numpy as np
import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct import _progress
from pyterrier_instruct.base import FAMILIES


@pytest.fixture
def library(monkeypatch):
    """The library switch back to "unset" (the environment decides) around a test."""
    monkeypatch.setattr(_progress, "_library", None)
    monkeypatch.delenv(_progress.LIBRARY_BARS_ENV, raising=False)
    return pti.library_progress


def _public_callables():
    """Every public name of the package (and the dataset subpackage), each public class's constructor and public
    methods, and every registered family: ``(label, callable)``."""
    import pyterrier_instruct.datasets as datasets
    out = []
    objects = [(n, getattr(pti, n)) for n in pti.__all__] + [(f"datasets.{n}", getattr(datasets, n))
                                                             for n in datasets.__all__]
    objects += [(n, cls) for n, cls in FAMILIES.items()]
    for name, obj in objects:
        members = [(name, obj)]
        if inspect.isclass(obj):
            inits = [c.__init__ for c in obj.__mro__ if "__init__" in vars(c)]  # **kwargs passed up: the base names it
            members = [(name, f) for f in inits] + [(f"{name}.{m}", f) for m, f in vars(obj).items()
                                                    if not m.startswith("_") and inspect.isfunction(f)]
        out += [(label, f) for label, f in members if callable(f)]
    return out


def test_every_public_verbose_defaults_to_true():
    with_verbose = {}
    for label, f in _public_callables():
        try:
            params = inspect.signature(f).parameters
        except (TypeError, ValueError):
            continue
        if "verbose" in params:
            with_verbose.setdefault(label, params["verbose"].default)
    # the stages whose work takes time are all found (the registered families and the long helpers)
    assert {"MonoT5", "BiEncoder", "RankZephyr", "OnRay", "BM25", "select_prompt",
            "prompt_study_report"} <= set(with_verbose)
    assert {k: v for k, v in with_verbose.items() if v is not True} == {}
    for backend in (pti.HFBackend, pti.VLLMBackend):  # no bar of their own: no verbose
        assert "verbose" not in inspect.signature(backend).parameters


def test_verbose_false_prints_no_bar(capsys, tmp_path):
    from pyterrier_instruct.dense.index import EmbeddingIndex
    from pyterrier_instruct.dense.selection import select_prompt
    from pyterrier_instruct.retrieval.pisa import bm25_index
    index = EmbeddingIndex.from_vectors(["a", "b", "c"], np.eye(3, dtype=np.float32))
    docs = [{"docno": f"d{i}", "text": f"word{i} common"} for i in range(3)]
    topics = pd.DataFrame({"qid": ["1"], "query": ["common"]})
    qrels = pd.DataFrame({"qid": ["1"], "docno": ["d1"], "label": [1]})
    system = pti.BM25(docs, str(tmp_path / "pisa"), verbose=False)
    capsys.readouterr()
    for verbose in (False, True):
        index.search(np.eye(3, dtype=np.float32), 2, block=1, verbose=verbose)
        bm25_index(docs, str(tmp_path / f"pisa-{verbose}"), verbose=verbose)
        select_prompt(system, topics, qrels, ["p1", "p2"], sample=None, verbose=verbose)
        err = capsys.readouterr().err
        for desc in ("EmbeddingIndex search", "PISA indexing", "select_prompt"):
            assert (desc in err) is verbose, (desc, verbose, err)


def test_library_switch_reads_the_environment(library, monkeypatch):
    assert library() is False
    monkeypatch.setenv(_progress.LIBRARY_BARS_ENV, "1")
    assert library() is True
    assert library(False) is False and library() is False  # set here: wins over the environment


def test_library_switch_controls_transformers_bars_not_verbose(library, tiny, capsys):
    """transformers' bars follow the library switch whatever the stage's ``verbose``; the package's bar follows
    ``verbose`` whatever the switch."""
    import transformers
    rows = pd.DataFrame({"qid": ["1"] * 3, "query": ["q"] * 3, "docno": ["a", "b", "c"], "text": ["x", "y", "z"]})
    for switch, verbose in ((False, True), (True, False)):
        library(switch)
        capsys.readouterr()
        pti.MonoT5(tiny["t5"], batch_size=1, verbose=verbose)(rows)
        assert ("MonoT5" in capsys.readouterr().err) is verbose
        assert transformers.utils.logging.is_progress_bar_enabled() is switch
        list(transformers.utils.logging.tqdm(range(3), desc="transformers-bar"))
        assert ("transformers-bar" in capsys.readouterr().err) is switch


def test_library_switch_drives_vllm_use_tqdm(library, tiny, monkeypatch):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    backend = pti.VLLMBackend(tiny["mistral"], chat_template="{{ messages[0]['content'] }}")
    for switch in (False, True):
        library(switch)
        backend.generate([backend.prepare([{"role": "user", "content": "hello"}])], max_new_tokens=1)
        assert backend._llm.calls[-1]["use_tqdm"] is switch
    with pytest.raises(TypeError, match="library_progress"):
        pti.VLLMBackend(tiny["mistral"], verbose=True)
