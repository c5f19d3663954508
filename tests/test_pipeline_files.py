"""Every file of pipelines/ runs as a researcher runs it (``python pipelines/<file>.py``, a fresh process) with
``--standins``: tiny random models at the real hub ids and the miniature benchmarks at the real dataset ids, from
:mod:`pyterrier_instruct.testing`, built once per session (``$PYTERRIER_INSTRUCT_STANDINS``); the vLLM file through the
vLLM stand-in (tests/fake_vllm.py), the IFIR file against the stand-in judge server on 127.0.0.1 (``--base-url``)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_instruct import testing

ROOT = Path(__file__).parents[1]
TESTS = Path(__file__).parent
FILES = sorted(p.name for p in (ROOT / "pipelines").glob("*.py"))

#: file → (extra arguments that keep the run small, the lines its output must hold)
RUNS = {
    "followir.py": (["--k", "10", "--max-output-tokens", "8"],
                    ["BM25 » MonoT5", "BM25 » FollowIR-7B", "BM25 » Qwen3-Reranker", "BM25 » rank1", "pMRR p-value"]),
    "infosearch.py": ([], ["BM25 (pool)", "MonoT5", "FollowIR-7B", "WISE", "SICR", "InfoSearch_pMRR"]),
    "ifir.py": (["--k", "10"], ["IFIR_nDCG@20", "BM25: INSTFOL@20", "BM25 » MonoT5: INSTFOL@20"]),
    "bright.py": (["--tasks", "biology", "--k", "10", "--max-output-tokens", "8"],
                  ["bright/biology", "BM25 » rank1", "nDCG@10"]),
    "nevir.py": (["--max-output-tokens", "8"], ["PairedAccuracy", "MonoT5", "Qwen3-Reranker", "rank1"]),
    "listwise_vllm.py": (["--k", "10"], ["BM25 » RankZephyr (vLLM)", "pMRR"]),
    "dense_prompts.py": (["--prompts", "2"], ["no prompt", "prompt 2", "'selected'"]),
}


def test_every_file_is_run():
    assert sorted(RUNS) == FILES


@pytest.fixture(scope="module")
def vllm_shim(tmp_path_factory):
    """A folder whose ``vllm`` module is tests/fake_vllm.py (vLLM cannot be installed here)."""
    folder = tmp_path_factory.mktemp("vllm-shim")
    shim = f"import sys\nsys.path.insert(0, {str(TESTS)!r})\nimport fake_vllm\nsys.modules['vllm'] = fake_vllm\n"
    (folder / "vllm.py").write_text(shim)
    return folder


def _run(name, args, standin_root, cwd, pythonpath=()):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, pythonpath), str(ROOT)]),  # this checkout's package
           testing.STANDINS_ENV: str(standin_root), "HF_HUB_OFFLINE": "1", "PYTERRIER_INSTRUCT_DATA": "",
           "PYTERRIER_INSTRUCT_MODELS": ""}
    return subprocess.run([sys.executable, str(ROOT / "pipelines" / name), "--standins", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_pipeline_runs_on_standins(name, standin_root, vllm_shim, tmp_path):
    args, expected = RUNS[name]
    server = testing.chat_server() if name == "ifir.py" else None
    try:
        done = _run(name, args + (["--base-url", server.url] if server else []), standin_root, tmp_path,
                    [vllm_shim] if name == "listwise_vllm.py" else [])
    finally:
        if server:
            server.close()
    assert done.returncode == 0, done.stderr[-3000:]
    missing = [line for line in expected if line not in done.stdout]
    assert not missing, f"{missing} not in\n{done.stdout}"
    if server:  # the judge on the given server judged the pairs of both systems (cached for the second)
        assert server.requests and all(r["body"]["model"] == "gpt-4o-mini" for r in server.requests)


def test_ifir_without_a_server_says_which_argument(tmp_path, standin_root):
    done = subprocess.run([sys.executable, str(ROOT / "pipelines" / "ifir.py")], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "--base-url" in done.stderr.splitlines()[-1]
