import os
import re
import shutil
import sys
import tempfile

# Tests never touch the network or the Hugging Face hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread per process for torch/OpenMP and BLAS (set before they load; child processes, kernels and Ray workers
# inherit it): the tiny models gain nothing from a second thread, and under `pytest -n N` every extra thread competes
# with the other workers for the same cores. A caller's own setting stands.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")
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
def minilm_vectors(mini, tmp_path_factory):
    """A ``cache_dir`` holding all-MiniLM-L6-v2's vectors of every instruct-mini document, encoded once a session: a
    ``SBertBiEncoder.all_minilm_l6_v2(cache_dir=minilm_vectors)`` encodes only queries (issue 45: the modules that
    score instruct-mini with the real MiniLM encoded the same 280 documents each)."""
    import pandas as pd

    import pyterrier_instruct as pti
    folder = str(tmp_path_factory.mktemp("minilm-vectors"))
    model = pti.SBertBiEncoder.all_minilm_l6_v2(cache_dir=folder, verbose=False)
    model.doc_encoder()(pd.DataFrame(list(mini.get_corpus_iter(verbose=False))))
    assert model.stats.passage_texts == 280
    return folder


#: Test lanes (``pytest -m <lane>``; pyproject.toml describes them, docs/testing.md lists them): each test is in the
#: first lane whose fixtures it uses (directly or through other fixtures), whose module it is in, or whose words its
#: own code holds; "unit" otherwise.
LANES = {
    "external": ({"ray_cluster", "rank_llm_026", "llmrankers", "anserini_bm25"}, set(), ()),
    "e2e": (set(), {"test_pipelines", "test_pipeline_files", "test_demo", "test_docs", "test_notebooks"}, ()),
    "tools": (set(), set(), ("subprocess", "Popen", "get_context(", "multiprocessing")),
    "models": ({"tiny", "qwen", "standin_root", "standin_models"}, set(), ("tiny_models.", "testing.models")),
}


def pytest_addoption(parser):
    parser.addoption("--reverse", action="store_true", help="run the collected tests in reverse order (an order check)")
    parser.addoption("--shuffle", type=int, metavar="SEED", help="run the collected tests in an order drawn from SEED")


def _source(function) -> str:
    import inspect
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


def _lane(item) -> str:
    import inspect
    import multiprocessing.context
    names = set(getattr(item, "fixturenames", ()))
    module = item.module.__name__ if getattr(item, "module", None) else ""
    code = _source(getattr(item, "function", None))
    helpers = [f for name, f in vars(item.module).items() if inspect.isfunction(f) and f.__module__ == module
               and not name.startswith("test_") and re.search(rf"\b{name}\(", code)] if module else []
    code += "".join(map(_source, helpers))  # the module's helpers the test calls
    if module and any(isinstance(v, multiprocessing.context.BaseContext) and re.search(rf"\b{k}\.", code)
                      for k, v in vars(item.module).items()):
        code += "multiprocessing"  # a module-level context (SPAWN = multiprocessing.get_context("spawn"))
    for lane, (fixtures, modules, words) in LANES.items():
        if names & fixtures or module in modules or any(w in code for w in words):
            return lane
    return "unit"


#: the lanes from the slowest tests to the quickest: under ``pytest -n N`` (``make test``) the heaviest work is handed
#: out first, so the quick unit tests even out the workers' ends
HEAVY_FIRST = ("external", "e2e", "tools", "models", "unit")


def pytest_collection_modifyitems(config, items):
    lanes = {}
    for item in items:
        lanes[item] = _lane(item)
        item.add_marker(getattr(pytest.mark, lanes[item]))
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its collection is the order work is handed out in
        items.sort(key=lambda item: HEAVY_FIRST.index(lanes[item]))
    if config.getoption("--reverse"):
        items.reverse()
    if config.getoption("--shuffle") is not None:
        import random
        random.Random(config.getoption("--shuffle")).shuffle(items)


def pytest_xdist_make_scheduler(config, log):
    """Under ``pytest -n N`` (pytest-xdist): each module's tests are one unit of work, handed to one worker (its module
    fixtures built once), the tests using the session's Ray cluster one unit (one cluster at a time), units in the
    workers' collection order (heaviest lanes first). pytest-xdist's own ``--dist loadgroup`` cannot say this: its
    ``xdist_group`` marks are lost on pytest 9 (it renames ``item._nodeid``, which pytest 9 no longer reads)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return ByModule(config, log)


def work_unit(nodeid: str) -> str:
    """The unit of work (``pytest -n N``) of the test ``nodeid``: ``"ray"``, else its module."""
    return "ray" if _uses_ray(nodeid) else nodeid.split("::", 1)[0]


def _uses_ray(nodeid: str) -> bool:
    """Whether the test of ``nodeid`` works on the session's Ray cluster: tests/test_ray.py, and every block of a docs
    page (tests/test_docs.py: a page's blocks share one namespace) that starts one (``local_cluster(``)."""
    if nodeid.startswith("tests/test_ray.py::"):
        return True
    match = re.fullmatch(r"tests/test_docs\.py::test_block_runs\[(.+)#\d+\]", nodeid)
    if not match:
        return False
    from test_docs import ROOT
    return "local_cluster(" in (ROOT / match.group(1)).read_text(encoding="utf-8")


def _standins_key() -> str:
    """A digest of what the stand-ins are made from: the files of ``pyterrier_instruct.testing`` (builders, layouts,
    bundled data) and the versions of the libraries that write them. Another key is another folder: a stand-in built
    by other code is never reused."""
    import hashlib
    import importlib.metadata
    import pyterrier_instruct.testing
    h = hashlib.sha256()
    package = Path(pyterrier_instruct.testing.__file__).parent
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    libraries = ("torch", "transformers", "tokenizers", "sentencepiece", "safetensors", "peft", "sentence-transformers")
    for dist in libraries:
        try:
            h.update(f"{dist}=={importlib.metadata.version(dist)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{dist} absent\0".encode())
    return h.hexdigest()[:16]


def _manifest(root: Path) -> dict:
    """``{relative path: sha256}`` of every file under ``root`` but the lock files and the manifest itself."""
    import hashlib
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock") and p.name != "manifest.json"}


@pytest.fixture(scope="session")
def standin_root():
    """A :func:`pyterrier_instruct.testing.install` root with every stand-in built (``models/``) and the miniature
    benchmarks (``data/``), the session's one: kept between sessions in ``$PTI_TEST_CACHE`` (default: the system's
    temporary folder) under :func:`_standins_key`, used only while every file matches the manifest written when it
    was built (else built again); the environment is left alone (pass the folders where they are needed)."""
    from filelock import FileLock

    from pyterrier_instruct import testing
    cache = Path(os.environ.get("PTI_TEST_CACHE") or Path(tempfile.gettempdir()) / "pyterrier-instruct-tests")
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / f"standins-{_standins_key()}"
    with FileLock(str(cache / f"{root.name}.lock")):
        manifest = root / "manifest.json"
        if not manifest.exists() or json.loads(manifest.read_text()) != _manifest(root):
            shutil.rmtree(root, ignore_errors=True)
            build = Path(tempfile.mkdtemp(prefix=f"{root.name}.", dir=cache))
            testing.install_models(build / "models")
            testing.install_datasets(build / "data")
            (build / "manifest.json").write_text(json.dumps(_manifest(build)))
            build.rename(root)
    return root


@pytest.fixture(scope="session")
def standin_models(standin_root):
    """The folder holding a tiny stand-in at every hub id of ``pyterrier_instruct.testing.MODELS``."""
    return standin_root / "models"


def _built(standin_models, kind: str) -> str:
    """The folder of the stand-in root's build of ``kind`` (a key of ``testing.BUILDERS``)."""
    home = standin_models / ".build" / kind.replace("-", "_")
    return str(home / (home / ".done").read_text())


@pytest.fixture(scope="session")
def tiny(standin_models):
    """Local folders of tiny random T5, Mistral, BERT and Llama models with locally trained tokenizers (the stand-in
    root's builds: read them, copy them to change them)."""
    return {kind: _built(standin_models, kind) for kind in ("t5", "mistral", "bert", "llama")}


class _Built(dict):
    """Folders built on first access by ``build(key)``, then kept (a session fixture building only what a run uses)."""

    def __init__(self, build):
        super().__init__()
        self._build = build

    def __missing__(self, key):
        self[key] = self._build(key)
        return self[key]


@pytest.fixture(scope="session")
def qwen(tmp_path_factory, standin_models):
    """Tiny random Qwen models by kind (``tiny_models.QWEN_KINDS``: 'reranker', 'reranker-seq-cls', 'embedding',
    'qwen2'): the stand-in root's builds, the others built on first use."""
    import tiny_models
    from pyterrier_instruct.testing.standins import VOCAB
    root = tmp_path_factory.mktemp("tiny-qwen")
    built = {"reranker": "qwen3-reranker", "embedding": "qwen3-embedding", "qwen2": "qwen2"}
    return _Built(lambda kind: _built(standin_models, built[kind]) if kind in built
                  else tiny_models.tiny_qwen(root, kind, vocab_size=VOCAB))  # as the root's: the same weights


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



# Issue 45 (alone in a fresh HOME): no test writes the user's home. In the session folder: mteb's ~/.cache/mteb (made
# when imported), IPython's ~/.ipython (the notebooks' kernels). Kept beside the stand-in root: vLLM's
# ~/.cache/vllm/modelinfos (all the tests' architectures, in-process: fake_vllm.inspect_once), matplotlib's
# ~/.cache and ~/.config/matplotlib (the font list). Off: onnxruntime's telemetry (imported by pyserini, it writes
# ~/.cache/Microsoft/DeveloperTools). The session's Ray cluster gets a token here instead of writing ~/.ray/auth_token.
import secrets  # noqa: E402
os.environ["MTEB_CACHE"] = os.path.join(os.environ["PYTERRIER_INSTRUCT_CACHE"], "mteb")
os.environ["IPYTHONDIR"] = os.path.join(os.environ["PYTERRIER_INSTRUCT_CACHE"], "ipython")
_LIBRARY_CACHE = Path(os.environ.get("PTI_TEST_CACHE") or Path(tempfile.gettempdir()) / "pyterrier-instruct-tests")
os.environ["VLLM_CACHE_ROOT"] = str(_LIBRARY_CACHE / "vllm")
os.environ["MPLCONFIGDIR"] = str(_LIBRARY_CACHE / "matplotlib")
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
