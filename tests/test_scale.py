"""``pti.on_ray`` without a cluster: how frames are cut into blocks, the wrapper's identity (repr, equality, pickling,
the saved-run key of what it wraps), what the worker checks and counts, the shards kept in a vector cache, the CLI
options. The runs on a cluster are in tests/test_ray.py."""
from __future__ import annotations

import pickle
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._fingerprint import fingerprint
from pyterrier_instruct.scale import OnRay, on_ray
from pyterrier_instruct.scale import blocks as B
from pyterrier_instruct.scale.worker import (add_counts, counted, difference, http_backends, model_paths, vllm_backends,
                                             vllm_gpus)


def frame(sizes, seed=0):
    rng = np.random.default_rng(seed)
    qids = np.repeat([f"q{i}" for i in range(len(sizes))], sizes)
    return pd.DataFrame({"qid": qids, "docno": [f"d{i}" for i in range(len(qids))],
                         "text": ["x" * int(n) for n in rng.integers(1, 500, len(qids))]})


@pytest.mark.parametrize("lengths", [False, True])
def test_query_blocks_hold_whole_queries_and_every_row_once(lengths):
    df = frame([5, 40, 3, 3, 12, 1, 7, 30]).sample(frac=1, random_state=1).reset_index(drop=True)  # queries interleaved
    lens = B.text_lengths(df, ["query", "text"]) if lengths else None
    parts = B.query_blocks(df["qid"], 10, lens)
    rows = np.concatenate(parts)
    assert sorted(rows.tolist()) == list(range(len(df)))
    owner = {q: n for n, p in enumerate(parts) for q in df["qid"].iloc[p]}
    assert all(df["qid"].iloc[p].map(owner).eq(n).all() for n, p in enumerate(parts))  # a query sits in one block
    assert all(len(p) <= 10 or df["qid"].iloc[p].nunique() == 1 for p in parts)  # only a large query alone exceeds it
    for p in parts:  # inside a block, each query's rows keep their input order
        for _, idx in pd.Series(p).groupby(df["qid"].iloc[p].to_numpy()):
            assert (np.diff(idx.to_numpy()) > 0).all()
    order = pd.unique(df["qid"].iloc[rows])
    if lengths:  # longest queries first
        means = df.assign(n=lens).groupby("qid")["n"].mean()
        assert (np.diff(means[order].to_numpy()) <= 0).all()
    else:  # first-seen order
        assert order.tolist() == pd.unique(df["qid"]).tolist()


def test_row_blocks_and_block_sizes():
    assert [b.tolist() for b in B.row_blocks(5, 2)] == [[0, 1], [2, 3], [4]]
    assert B.target_rows(1000, 2, None) == 125 and B.target_rows(10, 8, None) == 1
    assert B.target_rows(10 ** 7, 1, None) == 8192
    assert B.target_rows(1000, 2, 7) == 7
    with pytest.raises(ValueError, match="block_rows"):
        B.target_rows(10, 1, 0)


def test_repr_equality_pickling_and_fingerprint(mini, tmp_path):
    model = pti.MonoT5("/models/monot5")
    wrapped = on_ray(model, workers=2)
    assert repr(wrapped) == "on_ray(MonoT5('/models/monot5'), workers=2)"
    assert wrapped == on_ray(pti.MonoT5("/models/monot5"), workers=2)
    assert hash(wrapped) == hash(on_ray(model, workers=2))
    assert wrapped != on_ray(model, workers=3)
    copy = pickle.loads(pickle.dumps(wrapped))
    assert copy == wrapped and repr(copy) == repr(wrapped)
    # saved runs and other content-keyed caches see the wrapped system (the output is the same)
    pipeline, plain = mini.candidates() >> wrapped, mini.candidates() >> model
    assert repr(pipeline) != repr(plain) and fingerprint(pipeline) == fingerprint(plain)
    from pyterrier_instruct.evaluation.runs import SavedRun, run_key
    topics = mini.get_topics()
    assert run_key(pipeline, topics) == run_key(plain, topics)
    assert SavedRun(pipeline, str(tmp_path)).paths(topics) == SavedRun(plain, str(tmp_path)).paths(topics)
    # a dense model's retriever on the cluster keys as the model's own retriever
    dense = pti.BiEncoder("/models/bert")
    stage = on_ray(dense, workers=2).retriever("/indexes/x", num_results=5)
    assert repr(stage) == "on_ray(BiEncoder('/models/bert').retriever('/indexes/x', num_results=5), workers=2)"
    assert fingerprint(stage) == fingerprint(dense.retriever("/indexes/x", num_results=5))


def test_arguments_are_checked():
    model = pti.MonoT5("/m")
    with pytest.raises(TypeError, match="already runs on Ray"):
        on_ray(on_ray(model))
    with pytest.raises(TypeError, match="pt.Transformer"):
        on_ray(lambda df: df)
    for bad in ({"workers": 0}, {"gpus_per_worker": -1}, {"cpus_per_worker": 0}, {"max_retries": -1}):
        with pytest.raises(ValueError):
            on_ray(model, **bad)


def test_empty_input_and_inspect_need_no_cluster(monkeypatch):
    """An empty frame gives the wrapped transformer's shaped empty output and pt.inspect works, without Ray; with Ray
    missing, real work names the extra to install."""
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    wrapped = on_ray(pti.MonoT5("/nowhere"), workers=2)
    cols = ["qid", "query", "docno", "text"]
    out = wrapped(pd.DataFrame(columns=cols))
    assert list(out.columns) == cols + ["score", "rank"] and len(out) == 0
    assert pt.inspect.transformer_inputs(wrapped)
    assert "query_vec" in on_ray(pti.BiEncoder("/nowhere"))(pd.DataFrame(columns=["qid", "query"])).columns
    with pytest.raises(ImportError, match=r"pip install 'pyterrier-instruct\[ray\]'"):
        wrapped(pd.DataFrame({"qid": ["1"], "query": ["q"], "docno": ["d"], "text": ["t"]}))


def test_worker_reads_paths_backends_and_counters(tmp_path):
    local = tmp_path / "zephyr"
    local.mkdir()
    rz = pti.RankZephyr(backend=pti.HFBackend(str(local)))
    assert model_paths(rz) == [("backend.model_name_or_path", str(local))]  # found in the backend; the hub id is not
    assert model_paths(pti.MonoT5("castorini/monot5-base-msmarco-10k")) == []  # a hub id is not a path
    assert model_paths(pti.MonoT5("/abs/elsewhere")) == [("model_name_or_path", "/abs/elsewhere")]
    gpt = pti.RankGPT("gpt-4o", backend_options={"concurrency": 4})
    assert [b.concurrency for b in http_backends(gpt)] == [4] and http_backends(rz) == []
    engine = pti.RankZephyr("/m", backend="vllm",
                            backend_options={"tensor_parallel_size": 2, "pipeline_parallel_size": 3})
    assert vllm_gpus(vllm_backends(engine)[0]) == 6

    listwise = pti.ListwiseReranker(pti.FunctionBackend(lambda p, n: []))
    listwise.stats.update({"windows": 2})
    before = counted(listwise)
    listwise.stats.update({"windows": 3, "backend_calls": 1})
    delta = difference(counted(listwise), before)
    assert delta == {"stats": {"windows": 3, "backend_calls": 1}}
    add_counts(listwise, delta)
    assert listwise.stats == Counter({"windows": 8, "backend_calls": 2})
    dense = pti.BiEncoder("/m")
    add_counts(dense, {"stats": {"passage_texts": 5}})
    add_counts(dense.scorer(), {"stats": {"passage_texts": 2}})  # a stage's counts go to its model
    assert dense.stats.passage_texts == 7
    mono = pti.MonoT5("/m")
    add_counts(mono, difference(dict(counted(mono), truncated=4), counted(mono)))
    assert mono.truncated == 4


class _LocalBlocks:
    """What ``scale.dense.encode_corpus`` uses of ``on_ray(model)``, run in this process."""

    def __init__(self, model):
        self.transformer = model

    def run_blocks(self, model, mode, payloads, n_blocks):
        for n, strings in payloads:
            yield n, model.encode_passages(strings)


def test_shards_are_kept_in_a_vector_cache_and_reused(tmp_path):
    from stubs import TaggedEncoder, tagged_corpus

    from pyterrier_instruct.dense.cache import VectorCache
    from pyterrier_instruct.scale.dense import encode_corpus

    def run(docs, dim=4):
        stats = {}
        out = list(encode_corpus(_LocalBlocks(TaggedEncoder(dim=dim)), iter(docs), str(tmp_path), shard_size=4,
                                 stats=stats))
        return [d for d, _ in out], np.concatenate([v for _, v in out]), stats
    docs = tagged_corpus("A", 10)
    docnos, vectors, stats = run(docs)
    assert stats == {"shards": 3, "reused": 0, "encoded": 3}
    assert isinstance(pt.Artifact.load(str(tmp_path)), VectorCache)
    assert docnos == [[f"A{i}" for i in range(s, min(s + 4, 10))] for s in (0, 4, 8)]
    assert vectors[:, 1].tolist() == list(range(10))
    docs[5] = {"docno": "A5", "text": "A50"}  # one passage changed: its shard alone is encoded again
    again, changed, stats = run(docs)
    assert stats == {"shards": 3, "reused": 2, "encoded": 1} and again == docnos and changed[5, 1] == 50
    np.testing.assert_array_equal(np.delete(changed, 5, 0), np.delete(vectors, 5, 0))
    assert run(docs, dim=8)[2] == {"shards": 3, "reused": 0, "encoded": 3}  # another passage side: nothing reused


def test_cli_options():
    from pyterrier_instruct.reproduce import on_cluster, parse, parser
    from pyterrier_instruct.reproduce.followir import DATASETS, ROWS
    p = parser("followir", "", ROWS, DATASETS)
    assert parse(p, ["--ray"], ROWS, DATASETS).ray == "auto"
    args = parse(p, ["--ray", "head:6379", "--workers", "8", "--quiet"], ROWS, DATASETS)
    assert (args.ray, args.workers) == ("head:6379", 8)
    assert parse(p, [], ROWS, DATASETS).ray is None
    with pytest.raises(SystemExit):
        parse(p, ["--workers", "2"], ROWS, DATASETS)
    systems = {"bm25": pti.PoolBM25(), "monot5-base": pti.MonoT5("/m")}
    wrapped = on_cluster(systems, args)
    assert wrapped["bm25"] is systems["bm25"] and isinstance(wrapped["monot5-base"], OnRay)
    assert repr(wrapped["monot5-base"]) == "on_ray(MonoT5('/m'), workers=8, address='head:6379', verbose=False)"
    assert on_cluster(systems, parse(p, [], ROWS, DATASETS)) == systems


def test_cost_model():
    from pyterrier_instruct.scale import cost
    example = cost.issue_example()  # 7 M prompts × 600 tokens × 2 × 7.24 B parameters
    assert example["flops"] == pytest.approx(2 * 7.24e9 * 7e6 * 600)
    assert example["gpu_hours"] == pytest.approx(example["flops"] / (0.5 * 989e12) / 3600)
    assert 33 < example["gpu_hours"] < 35
    table = cost.estimate()
    assert set(table["benchmark"]) == {"FollowIR", "InfoSearch", "IFIR", "InstructIR", "BEIR"}
    assert table["model"].isin(list(cost.PARAMS)).all() and (table["gpu_hours"] > 0).all()
    followir = table[(table["benchmark"] == "FollowIR") & (table["model"] == "FollowIR-7B")]
    assert followir["items"].sum() == (104 + 64 + 40) * 1000
    assert (table[table["model"].str.startswith("MonoT5")]["tokens"] <= 512).all()
    assert cost.estimate(utilisation=0.25)["gpu_hours"].sum() == pytest.approx(2 * table["gpu_hours"].sum())
    assert cost.wall_hours(32, 8, 2, startup_hours=0) == 2 and cost.wall_hours(32, 8, 2) > 2
    # prefix reuse: only the causal pointwise rerank rows; a candidate keeps its own tokens + the unfilled cache block
    reuse = cost.prefix_reuse()
    assert set(reuse["model"]) == set(cost.CAUSAL)
    assert set(reuse["benchmark"]) == {"FollowIR", "InfoSearch", "InstructIR"}
    robust = reuse[(reuse["dataset"] == "robust04") & (reuse["model"] == "FollowIR-7B")].iloc[0]
    assert robust["shared"] == cost.PREFIX_TEMPLATE_TOKENS + cost.tokens(15 + 75.2, False)
    assert robust["tokens_with_reuse"] == pytest.approx(robust["tokens"] - (robust["shared"] - 8) * 999 / 1000, abs=0.1)
    assert ((reuse["saving"] > 0.1) & (reuse["saving"] < 0.5)).all()
    exact = cost.prefix_reuse(block=0)  # share_prefix: no block rounding
    assert (exact["gpu_hours_with_reuse"] < reuse["gpu_hours_with_reuse"]).all()
    assert (table[table["model"].str.startswith("MonoT5")]["shared"] == 0).all()
    with pytest.raises(ValueError):
        cost.estimate(utilisation=0)
    with pytest.raises(ValueError):
        cost.wall_hours(1, 0)


def test_worker_splits_the_http_limit_and_checks_paths(monkeypatch, tmp_path):
    """Built in this process (no cluster): each of the actors keeps its share of an HTTP backend's concurrency; a
    missing model folder stops the worker before anything loads, naming it and the path; a multi-GPU vLLM engine gets
    Ray's executor."""
    from pyterrier_instruct.scale import worker as W
    monkeypatch.setattr("pyterrier_instruct.scale.cluster.worker_identity",
                        lambda: "Ray worker actor a1 (pid 1) on host h")
    shares = {}
    for limit, actors in ((2, 2), (8, 3), (5, 1)):
        w = W.BlockWorker(pti.RankGPT("gpt-4o", backend_options={"concurrency": limit}), "rerank", http_actors=actors)
        shares[(limit, actors)] = w.transformer.backend.concurrency
    assert shares == {(2, 2): 1, (8, 3): 2, (5, 1): 5}
    with pytest.raises(FileNotFoundError, match=r"Ray worker actor a1 \(pid 1\) on host h cannot see /gone/t5 "
                                                r"\(model_name_or_path of MonoT5\)"):
        W.BlockWorker(pti.MonoT5("/gone/t5"), "rerank", model_paths(pti.MonoT5("/gone/t5")))
    engine = pti.RankZephyr("/m", backend="vllm", backend_options={"tensor_parallel_size": 2})
    kwargs = W.BlockWorker(engine, "rerank", vllm_executor=True).transformer.backend.llm_kwargs
    assert kwargs["distributed_executor_backend"] == "ray"
    single = pti.RankZephyr("/m", backend="vllm")
    kwargs = W.BlockWorker(single, "rerank", vllm_executor=True).transformer.backend.llm_kwargs
    assert "distributed_executor_backend" not in kwargs
