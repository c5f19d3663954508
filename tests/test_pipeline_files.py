"""Every file of pipelines/ runs as a researcher runs it (``python pipelines/<file>.py``: here run as ``__main__`` in
this process, with its command line and environment) with ``--standins``: tiny random models at the real hub ids and the
miniature benchmarks at the real dataset ids, from :mod:`pyterrier_instruct.testing`, the session's stand-in root
(``$PYTERRIER_INSTRUCT_STANDINS``); the vLLM file through the vLLM stand-in (tests/fake_vllm.py), the IFIR file against
the stand-in judge server on 127.0.0.1 (``--base-url``)."""
import runpy
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
    # every row labelled (tests/test_standin_labels.py; was: "MonoT5" alone)
    "infosearch.py": ([], ["BM25 (pool) [stand-in]", "MonoT5 [stand-in]", "FollowIR-7B [stand-in]", "WISE", "SICR",
                           "InfoSearch_pMRR"]),
    "ifir.py": (["--k", "10"], ["IFIR_nDCG@20", "BM25 [stand-in]: INSTFOL@20", "BM25 » MonoT5 [stand-in]: INSTFOL@20"]),
    "bright.py": (["--tasks", "biology", "--k", "10", "--max-output-tokens", "8"],
                  ["bright/biology", "BM25 » rank1", "nDCG@10"]),
    "nevir.py": (["--max-output-tokens", "8"], ["PairedAccuracy", "MonoT5", "Qwen3-Reranker", "rank1"]),
    "listwise_vllm.py": (["--k", "10"], ["BM25 » RankZephyr (vLLM)", "pMRR"]),
    "dense_prompts.py": (["--prompts", "2"], ["no prompt", "prompt 2", "'selected'"]),
}


def test_every_file_is_run():
    assert sorted(RUNS) == FILES


def _run(name, args, standin_root, cwd, monkeypatch, capsys):
    """``python pipelines/<name> --standins <args>`` in ``cwd``, in this process: (exit status, stdout, stderr). The
    environment the file sets (testing.install) is restored afterwards."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "pipelines" / name), "--standins", *args])
    for var, value in ((testing.STANDINS_ENV, str(standin_root)), ("HF_HUB_OFFLINE", "1"),
                       ("PYTERRIER_INSTRUCT_DATA", ""), ("PYTERRIER_INSTRUCT_MODELS", "")):
        monkeypatch.setenv(var, value)
    capsys.readouterr()
    try:
        runpy.run_path(str(ROOT / "pipelines" / name), run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", sorted(RUNS))
def test_pipeline_runs_on_standins(name, standin_root, tmp_path, monkeypatch, capsys):
    args, expected = RUNS[name]
    server = testing.chat_server() if name == "ifir.py" else None
    if name == "listwise_vllm.py":
        import fake_vllm
        monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    try:
        code, out, err = _run(name, args + (["--base-url", server.url] if server else []), standin_root, tmp_path,
                              monkeypatch, capsys)
    finally:
        if server:
            server.close()
    assert code == 0, err[-3000:]
    missing = [line for line in expected if line not in out]
    assert not missing, f"{missing} not in\n{out}"
    if server:  # the judge on the given server judged the pairs of both systems (cached for the second)
        assert server.requests and all(r["body"]["model"] == "gpt-4o-mini" for r in server.requests)


def test_ifir_without_a_server_says_which_argument(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "pipelines" / "ifir.py")])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(ROOT / "pipelines" / "ifir.py"), run_name="__main__")
    assert exit_.value.code == 2 and "--base-url" in capsys.readouterr().err.splitlines()[-1]
