"""benchmarks/gpu_pointwise.py runs end to end in its ``--tiny`` CPU mode, on both paths (vLLM: the stand-in of
tests/fake_vllm.py), and its vLLM row counts prefix-cache hits; benchmarks/bench_throughput.py runs a family end to end."""
import importlib.util
import sys
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
    table = bench.main(["--tiny", "--models", "followir-7b", "--docs", "3", "--out", str(tmp_path / "rows.json")])
    assert table["run"].tolist() == ["transformers", "transformers share_prefix", "vllm"]
    assert (table["docs"] == 6).all() and (table["docs_per_s"] > 0).all() and (table["prompt_tokens_per_s"] > 0).all()
    hits = dict(zip(table["run"], table["prefix_hit_rate"]))
    # vLLM's cache also serves the template's head across queries; share_prefix reuses within a query only
    assert hits["transformers"] == 0 and 0 < hits["transformers share_prefix"] < 1 and 0 < hits["vllm"] < 1
    assert table["fraction_of_peak"].isna().all()  # no GPU: no peak to compare with
    out = capsys.readouterr().out
    assert "| model | run | docs |" in out and "device: cpu" in out and (tmp_path / "rows.json").exists()


def test_throughput_benchmark_runs_a_family(capsys):
    spec = importlib.util.spec_from_file_location("bench_throughput", BENCH.parent / "bench_throughput.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(["--only", "causal", "--rows", "6", "--repeat", "1", "--peer-batch-sizes", "1,2"])
    (r,) = rows
    assert r["n"] == 6 and r["peer_best_at"] in (1, 2) and r["delta"] < 1e-5 and r["gemm"] is None and r["gemm_rate"] > 0
    out = capsys.readouterr().out
    assert "| FollowIR-7B prompt: small Mistral |" in out and "| family | ours at defaults (docs/s) |" in out
    with pytest.raises(SystemExit):
        module.main(["--only", "nope"])
