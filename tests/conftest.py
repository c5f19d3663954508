import os
import shutil
import sys
import tempfile

# Tests never touch the network or the Hugging Face hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Dataset ids resolve to the miniature benchmarks in their released layouts, which the package's generator
# (pyterrier_instruct.testing.layouts) writes into a temporary folder at configuration (pytest_configure); the cache
# is never a user's one.
os.environ["PYTERRIER_INSTRUCT_DATA"] = tempfile.mkdtemp(prefix="pti-layouts-")
os.environ["IR_DATASETS_HOME"] = os.path.join(os.path.dirname(__file__), "data", "no-ir-datasets-home")
# Issue 45 (self-contained): the package's own cache (file digests, tests/test_identity.py) goes to a folder of this
# session, which the processes tests start inherit, never the user's ~/.cache/pyterrier_instruct.
os.environ["PYTERRIER_INSTRUCT_CACHE"] = tempfile.mkdtemp(prefix="pti-cache-")
import atexit  # noqa: E402
atexit.register(shutil.rmtree, os.environ["PYTERRIER_INSTRUCT_CACHE"], True)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

DATA = Path(__file__).parent / "data"


def pytest_configure(config):
    from pyterrier_instruct.testing.layouts import write
    write(os.environ["PYTERRIER_INSTRUCT_DATA"])  # read by tests as $PYTERRIER_INSTRUCT_DATA (their LAYOUTS)


def pytest_unconfigure(config):
    shutil.rmtree(os.environ["PYTERRIER_INSTRUCT_DATA"], ignore_errors=True)


@pytest.fixture(scope="session")
def pmrr_cases():
    with open(DATA / "pmrr_cases.json") as f:
        return json.load(f)["cases"]


@pytest.fixture(scope="session")
def mini():
    import pyterrier_instruct as pti
    return pti.load_dataset("instruct-mini")


@pytest.fixture(scope="session")
def mini_bm25(mini):
    import pyterrier_instruct as pti
    return pti.BM25(mini.get_corpus_iter())


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Local folders of tiny random T5, Mistral and BERT models with locally trained tokenizers."""
    import tiny_models
    root = tmp_path_factory.mktemp("tiny-models")
    return {"t5": tiny_models.tiny_t5(root), "mistral": tiny_models.tiny_mistral(root), "bert": tiny_models.tiny_bert(root)}


@pytest.fixture(scope="session")
def standin_root(tmp_path_factory):
    """A :func:`pyterrier_instruct.testing.install` root with every stand-in built (``models/``) and the miniature
    benchmarks (``data/``), once per session; the environment is left alone (pass the folders where they are needed)."""
    from pyterrier_instruct import testing
    root = tmp_path_factory.mktemp("standins")
    testing.install_models(root / "models")
    testing.install_datasets(root / "data")
    return root


@pytest.fixture(scope="session")
def standin_models(standin_root):
    """The folder holding a tiny stand-in at every hub id of ``pyterrier_instruct.testing.MODELS``."""
    return standin_root / "models"


class _Built(dict):
    """Folders built on first access by ``build(key)``, then kept (a session fixture that builds only what a run uses)."""

    def __init__(self, build):
        super().__init__()
        self._build = build

    def __missing__(self, key):
        self[key] = self._build(key)
        return self[key]


@pytest.fixture(scope="session")
def qwen(tmp_path_factory):
    """Tiny random Qwen models by kind (``tiny_models.QWEN_KINDS``: 'reranker', 'reranker-seq-cls', 'embedding', 'qwen2'),
    each built on first use."""
    import tiny_models
    root = tmp_path_factory.mktemp("tiny-qwen")
    return _Built(lambda kind: tiny_models.tiny_qwen(root, kind))


#: Where ``make install`` puts rank-llm 0.26.0 (pure Python; it declares Python >= 3.12 but runs on 3.11):
#: ``pip install --no-deps --ignore-requires-python --target $(VENV)/rank_llm_0.26 rank-llm==0.26.0 dacite``.
RANK_LLM_026 = Path(os.environ.get("RANK_LLM_026", Path(sys.prefix) / "rank_llm_0.26"))


@pytest.fixture(scope="module")
def rank_llm_026():
    """rank_llm 0.26.0 importable for one test module (its folder on sys.path, its modules dropped afterwards)."""
    if not (RANK_LLM_026 / "rank_llm" / "__init__.py").exists():
        pytest.skip(f"rank-llm 0.26.0 is not installed in {RANK_LLM_026} (run `make install`, or pip install --no-deps "
                    f"--ignore-requires-python --target {RANK_LLM_026} rank-llm==0.26.0 dacite)")
    sys.path.insert(0, str(RANK_LLM_026))
    try:
        import rank_llm
        assert Path(rank_llm.__file__).is_relative_to(RANK_LLM_026), rank_llm.__file__
        yield RANK_LLM_026
    finally:
        sys.path.remove(str(RANK_LLM_026))
        for name in [m for m in sys.modules if m == "rank_llm" or m.startswith("rank_llm.")]:
            del sys.modules[name]


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the test session: 2 CPUs, no GPU, listening on 127.0.0.1 only; shut down at the end."""
    pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    import ray
    from pyterrier_instruct.scale import local_cluster
    started = not ray.is_initialized()
    if started:  # the workers import test helpers (tests/ on their path, as on this process's)
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(__file__), before) if p)
        try:
            local_cluster(num_cpus=2, num_gpus=0)
        finally:
            os.environ.pop("PYTHONPATH") if before is None else os.environ.__setitem__("PYTHONPATH", before)
    yield ray
    if started:
        ray.shutdown()
