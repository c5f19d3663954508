"""benchmarks/gpu_pointwise.py runs end to end in its ``--tiny`` CPU mode, on both paths (vLLM: the stand-in of
tests/fake_vllm.py), and its vLLM row counts prefix-cache hits; benchmarks/gpu_run.sh (the one command for a GPU
machine without network) runs it with its wheels step and writes the table; benchmarks/bench_throughput.py runs a
family end to end."""
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks" / "gpu_pointwise.py"


@pytest.fixture
def bench(monkeypatch):
    import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm)
    fake_vllm.instances.clear()
    spec = importlib.util.spec_from_file_location("gpu_pointwise", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_run_prints_every_column(bench, tmp_path, capsys):
    table = bench.main(["--tiny", "--models", "followir-7b,qwen3-reranker-8b", "--docs", "3",
                        "--out", str(tmp_path / "rows.json")])
    runs, models = ["transformers", "transformers share_prefix", "vllm"], ["followir-7b", "qwen3-reranker-8b"]
    assert list(zip(table["model"], table["run"])) == [(m, r) for m in models for r in runs]
    assert (table["docs"] == 6).all() and (table["docs_per_s"] > 0).all() and (table["prompt_tokens_per_s"] > 0).all()
    for model, rows in table.groupby("model"):
        hits = dict(zip(rows["run"], rows["prefix_hit_rate"]))
        # vLLM's cache also serves the template's head across queries; share_prefix reuses within a query only
        assert hits["transformers"] == 0 and 0 < hits["transformers share_prefix"] < 1 and 0 < hits["vllm"] < 1, model
    assert table["fraction_of_peak"].isna().all()  # no GPU: no peak to compare with
    out = capsys.readouterr().out
    assert "| model | run | docs |" in out and "device: cpu" in out and (tmp_path / "rows.json").exists()


def test_throughput_benchmark_runs_a_family(capsys):
    import torch
    spec = importlib.util.spec_from_file_location("bench_throughput", BENCH.parent / "bench_throughput.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()  # the suite's (tests/conftest.py): main sets its --threads for the process
    rows = module.main(["--only", "causal", "--rows", "6", "--repeat", "1", "--peer-batch-sizes", "1,2",
                        "--threads", str(threads)])
    assert torch.get_num_threads() == threads
    (r,) = rows
    assert r["n"] == 6 and r["peer_best_at"] in (1, 2) and r["delta"] < 1e-5 and r["gemm"] is None
    assert r["gemm_rate"] > 0
    out = capsys.readouterr().out
    assert "| FollowIR-7B prompt: small Mistral |" in out and "| family | ours at defaults (docs/s) |" in out
    with pytest.raises(SystemExit):
        module.main(["--only", "nope"])


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_run_script_installs_nothing_here_and_writes_the_table(tmp_path):
    """The script end to end on one model (a process each; test_tiny_run_prints_every_column runs both in one)."""
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path / "out"), WHEELS=str(tmp_path / "no-wheels"),
               MODELS="qwen3-reranker-8b")
    done = subprocess.run(["bash", str(BENCH.parent / "gpu_run.sh"), "--tiny", "--docs", "2"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "nothing to install: every package the benchmark needs is here" in done.stderr
    table = (tmp_path / "out" / "gpu_pointwise.md").read_text().strip().splitlines()
    assert table[0] == "device: cpu"
    assert table[1].startswith("| model | run | docs | prompt_tokens | seconds | docs_per_s | prompt_tokens_per_s")
    assert [tuple(c.strip() for c in line.split("|")[1:3]) for line in table[3:]] == [
        ("qwen3-reranker-8b", "transformers"), ("qwen3-reranker-8b", "transformers share_prefix")]
    rows = json.loads((tmp_path / "out" / "qwen3-reranker-8b.json").read_text())
    assert [r["docs"] for r in rows] == [4, 4] and all(r["prompt_tokens_per_s"] > 0 for r in rows)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["gpu_pointwise.md", "qwen3-reranker-8b.json"]


def test_gpu_wheels_installs_only_what_is_missing(tmp_path):
    wheels = _load("gpu_wheels")
    assert wheels.missing() == []  # the test environment has every package the benchmark needs
    assert wheels.missing(("pyterrier==0.0.1", "pti-probe==1.0")) == ["pti-probe==1.0"]  # any installed version counts
    folder = tmp_path / "wheels"
    folder.mkdir()
    with pytest.raises(FileNotFoundError,
                       match=r"no wheel of pti-probe==1.0 in .*wheels: run `python benchmarks/gpu_wheels.py "
                             r"download` where there is network"):
        wheels.install(folder, tmp_path / "site", ("pti-probe==1.0",))
    with zipfile.ZipFile(folder / "pti_probe-1.0-py3-none-any.whl", "w") as w:
        w.writestr("pti_probe/__init__.py", "VALUE = 41 + 1\n")
        w.writestr("pti_probe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pti-probe\nVersion: 1.0\n")
    assert wheels.install(folder, tmp_path / "site", ("pyterrier==1.1.2", "pti-probe==1.0")) == ["pti-probe==1.0"]
    probe = "import importlib.metadata as m, pti_probe; print(pti_probe.VALUE, m.version('pti-probe'))"
    out = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, PYTHONPATH=str(tmp_path / "site")),
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["42", "1.0"]
