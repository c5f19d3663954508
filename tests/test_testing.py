"""pyterrier_instruct.testing, the public stand-ins: every preset's hub id and every reproduction row has one, each
family loads "its" checkpoint from them and scores, the miniature benchmarks it writes are the committed fixtures, and
nothing heavy is imported with it."""
from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct import testing
from pyterrier_instruct._config import Configured, preset
from pyterrier_instruct._hub import is_path

LAYOUTS = Path(os.environ["PYTERRIER_INSTRUCT_DATA"])  # written by conftest.py


def _preset_ids():
    """Every hub id a public family's constructor default or ``@preset`` (called with its defaults) names."""
    ids = {}
    for name in pti.__all__:
        cls = getattr(pti, name)
        if not (isinstance(cls, type) and issubclass(cls, Configured)):
            continue
        param = inspect.signature(cls.__init__).parameters.get("model_name_or_path")
        if param is not None and isinstance(param.default, str):
            ids[param.default] = f"{name}()"
        for key, value in vars(cls).items():
            if not isinstance(value, preset):
                continue
            if name == "Rank1":
                from pyterrier_instruct.pointwise.rank1 import AWQ_SIZES, CHECKPOINTS
                calls = [((n,), {}) for n in CHECKPOINTS] + [((n,), {"awq": True, "backend": "vllm"})
                                                             for n in AWQ_SIZES]
            else:
                calls = [((), {})]
            for args, kwargs in calls:
                model = getattr(cls, key)(*args, **kwargs)
                ids[str(model.model_name_or_path)] = f"{name}.{key}{args}"
    return ids


def test_every_preset_has_a_standin():
    ids = _preset_ids()
    assert {"Qwen/Qwen3-Reranker-0.6B", "mixedbread-ai/mxbai-rerank-base-v2", "jhu-clsp/rank1-7b",
            "Qwen/Qwen3-Embedding-8B", "castorini/rank_zephyr_7b_v1_full", "castorini/rank_vicuna_7b_v1"} <= set(ids)
    missing = {i: call for i, call in ids.items() if "/" in i and not is_path(i) and i not in testing.MODELS}
    assert not missing, f"add a row to pyterrier_instruct.testing.MODELS for {missing}"


def test_every_reproduction_row_has_a_standin():
    import pyterrier_instruct.reproduce as reproduce
    from pyterrier_instruct.reproduce.arguments import Row
    rows = {}
    for info in pkgutil.iter_modules(reproduce.__path__):
        module = importlib.import_module(f"{reproduce.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, dict):  # an API model's name (gpt-4o) is served, not loaded: hub ids only
                rows.update({r.model: f"{info.name}:{r.name}" for r in value.values() if isinstance(r, Row) and r.model
                             and "/" in r.model})
    assert len(rows) > 10
    assert not {m: row for m, row in rows.items() if m not in testing.MODELS}


def test_every_lora_base_is_a_standin():
    bases = [kind.split(":", 1)[1] for kind in testing.MODELS.values() if kind.startswith(("lora:", "lora-lm:"))]
    assert bases and all(testing.MODELS.get(b) in testing.BUILDERS for b in bases)
    assert set(testing.MODELS.values()) <= set(testing.BUILDERS)


def test_unknown_id_is_named(tmp_path):
    with pytest.raises(ValueError, match="no stand-in for \\['me/my-model'\\]"):
        testing.install_models(tmp_path, ["me/my-model"])


FRAME = pd.DataFrame({"qid": ["1", "1"], "query": ["dam fish", "dam fish"],
                      "instruction": ["salmon only", "salmon only"], "docno": ["a", "b"],
                      "text": ["Dams block salmon migration.", "Coral reefs bleach in warm water."],
                      "score": [2.0, 1.0], "rank": [0, 1]})

FAMILIES = {  # the default constructor of each family whose checkpoint the old docs table lacked, and the classics
    "MonoT5": lambda: pti.MonoT5(verbose=False),
    "FollowIR7B": lambda: pti.FollowIR7B(verbose=False),
    "Qwen3Reranker": lambda: pti.Qwen3Reranker(verbose=False),
    "MxbaiRerankV2": lambda: pti.MxbaiRerankV2(verbose=False),
    "Rank1": lambda: pti.Rank1(max_output_tokens=4, verbose=False),
    "RankZephyr": lambda: pti.RankZephyr(verbose=False),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_family_loads_its_standin(family, standin_models, monkeypatch):
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(standin_models))
    out = FAMILIES[family]()(FRAME)
    assert list(out.docno) != [] and out["score"].notna().all() and set(out.docno) == {"a", "b"}


@pytest.mark.parametrize("family", ["Promptriever", "Qwen3Embedding"])
def test_dense_family_loads_its_standin(family, standin_models, monkeypatch):
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(standin_models))
    model = getattr(pti, family)(verbose=False)
    out = model(FRAME.drop(columns=["score", "rank"]))
    assert out["score"].notna().all() and len(out) == 2


def test_install_sets_the_roots_and_is_reused(tmp_path, monkeypatch):
    for var in ("PYTERRIER_INSTRUCT_MODELS", "PYTERRIER_INSTRUCT_DATA"):  # restored afterwards, whatever install() sets
        monkeypatch.setenv(var, "unset")
        monkeypatch.delenv(var)
    env = testing.install(tmp_path, models=["castorini/monot5-base-msmarco-10k"])
    assert env == \
        {"PYTERRIER_INSTRUCT_MODELS": str(tmp_path / "models"), "PYTERRIER_INSTRUCT_DATA": str(tmp_path / "data")}
    assert (tmp_path / "models" / "castorini/monot5-base-msmarco-10k" / "config.json").is_file()
    assert len(pti.load_dataset("followir/robust04").get_topics()) > 0
    stamp = (tmp_path / "models" / "castorini/monot5-base-msmarco-10k" / "config.json").stat().st_mtime_ns
    testing.install(tmp_path, models=["castorini/monot5-base-msmarco-10k"])  # kept, not rebuilt
    assert (tmp_path / "models" / "castorini/monot5-base-msmarco-10k" / "config.json").stat().st_mtime_ns == stamp


def test_import_stays_light():
    code = ("import json, sys\nimport pyterrier_instruct, pyterrier_instruct.testing\n"
            "print(json.dumps([m for m in ('torch', 'transformers', 'pyterrier_instruct.pointwise') if m in "
            "sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
