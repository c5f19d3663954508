"""``pti.on_ray`` and PyTerrier's ``.parallel(backend='ray')`` on one local Ray cluster (2 CPUs, 127.0.0.1 only, the
session's ``ray_cluster`` fixture): every family gives the single-process output; a killed actor's blocks are retried
with nothing lost or doubled; a worker without the model files names itself and the path; corpus encoding resumes from
its finished shards; the reproduction CLI runs with ``--ray`` and keeps its saved runs' keys."""
from __future__ import annotations

import os
import pickle
import re
import shutil
import socket
import threading
import time
import zlib

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

pytest.importorskip("ray")

import pyterrier_instruct as pti  # noqa: E402
from pyterrier_instruct.base import InstructReranker  # noqa: E402
from pyterrier_instruct.scale import OnRay, cluster  # noqa: E402
from pyterrier_instruct.scale import worker as W  # noqa: E402
from stubs import ChatServer  # noqa: E402

KEY_ENV = "PTI_RAY_TEST_KEY"


class HashScorer(InstructReranker):
    """A model-free reranker (score: a hash of query, instruction and docno; ``reasoning``, an extra output as rank1's,
    the hashed key). With ``kill_dir``, the first process that scores query ``victim`` exits at once (``os._exit``),
    once: a marker file in ``kill_dir`` records its pid."""
    extra_outputs = ("reasoning",)

    def __init__(self, kill_dir=None, victim=None, text_field="text", instruction="", verbose=False):
        self.kill_dir, self.victim = kill_dir, victim
        self.text_field, self.instruction, self.verbose = text_field, instruction, verbose

    def _score(self, df):
        if self.kill_dir is not None and self.victim in set(df["qid"]):
            try:
                fd = os.open(os.path.join(self.kill_dir, "killed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os._exit(1)
        keys = df["query"] + "|" + df["instruction"] + "|" + df["docno"].astype(str)
        return np.array([zlib.crc32(k.encode()) / 2 ** 32 for k in keys]), {"reasoning": keys.tolist()}


class EachFamily(pt.Transformer):
    """Several rerankers over one frame: their outputs one after another, with the reranker's position as ``family``
    (one ``on_ray`` run, one actor, for all of them)."""

    def __init__(self, rerankers):
        self.rerankers = list(rerankers)

    def transform(self, inp):
        return pd.concat([r(inp).assign(family=n) for n, r in enumerate(self.rerankers)], ignore_index=True)


class HereBlocks(OnRay):
    """``on_ray``'s driver with its actors' code run in this process: each run's blocks go, pickled, to one
    ``BlockWorker`` (the transformer pickled to it, without its model), and their results and counts come back
    pickled, as from Ray. Tests using it set ``cluster.worker_identity`` (it asks Ray where it runs)."""

    def run_blocks(self, transformer, mode, payloads, n_blocks):
        actor = W.BlockWorker(pickle.loads(pickle.dumps(transformer)), mode, W.model_paths(transformer))
        for block, payload in payloads:
            _, result, counts, _ = actor.run(block, pickle.dumps(payload))
            W.add_counts(transformer, pickle.loads(counts))
            yield block, pickle.loads(result)
        self.last_run = {"mode": mode, "blocks": n_blocks}


def reverse_windows(prompts, max_new_tokens):
    """A listwise "model": each window's passages in reverse order."""
    return [" > ".join(f"[{i}]" for i in range(max(map(int, re.findall(r"\[(\d+)\]", p[-1]["content"]))), 0, -1))
            for p in prompts]


@pytest.fixture(scope="module")
def frames(mini):
    topics = mini.get_topics().iloc[:8]  # 4 base queries, og + changed
    return topics, mini.candidates()(topics)


def same_run(out: pd.DataFrame, ref: pd.DataFrame, atol: float = 1e-6) -> None:
    """Same rows in the same order, same columns, scores within ``atol``, the same ranks (up to scores tied within
    ``atol``, which float rounding may order either way)."""
    assert list(out.columns) == list(ref.columns)
    assert out["qid"].tolist() == ref["qid"].tolist() and out["docno"].tolist() == ref["docno"].tolist()
    np.testing.assert_allclose(out["score"].to_numpy(), ref["score"].to_numpy(), atol=atol)
    if atol == 0:
        assert out["rank"].tolist() == ref["rank"].tolist()
    for _, group in out.assign(_ref=ref["rank"].to_numpy()).groupby("qid"):
        assert sorted(group["rank"]) == sorted(group["_ref"])
        assert (np.diff(group.sort_values("_ref")["score"].to_numpy()) <= atol).all()


def test_parallel_ray_backend(ray_cluster, tiny, frames):
    """PyTerrier's own convention: a transformer pickles without its model, so ``.parallel(2, backend='ray')``
    (pyterrier 1.1's ``Transformer.parallel`` → pyterrier-alpha's ``PoolParallelTransformer`` over
    ``ray.util.multiprocessing.Pool``) gives the single-process run. It splits by query and concatenates the splits in
    qid order, so rows are compared per (qid, docno)."""
    if pt.java.started():  # known limitation, documented in docs/scaling.md
        pytest.skip("PyTerrier's .parallel re-starts Java in each worker with Terrier's Maven resolution, which "
                    "needs the network once Java was started in this process (an Anserini test ran first); pti.on_ray "
                    "does not")
    _, cands = frames
    cands = cands[cands["qid"].isin(cands["qid"].unique()[:4])]  # 2 parts of 2 queries
    model = pti.MonoT5(tiny["t5"])
    ref = model(cands)
    with pytest.warns(UserWarning, match="experimental"):
        par = model.parallel(2, backend="ray")
    out = par(cands)
    key = ["qid", "docno"]
    out, ref = (x.sort_values(key, kind="stable").reset_index(drop=True) for x in (out, ref))
    same_run(out, ref)


def test_pointwise_blocks_equal_single_process(ray_cluster, tiny, frames, capfd):
    """Blocks spread over 2 actors give the single-process run. With ``verbose=False`` nothing reaches the driver's
    stderr, and its core worker logs no error (Ray Data's actors, whose constructor arguments sat in the object store
    with ``max_restarts > 0``, made it log one per actor; Ray Data warned "Progress bars disabled" on stderr)."""
    import glob
    _, cands = frames
    model = pti.MonoT5(tiny["t5"])
    ref = model(cands)
    ray_model = pti.on_ray(model, workers=2, block_rows=56, verbose=False)
    logs = ray_cluster._private.worker._global_node.get_logs_dir_path()
    [core_log] = glob.glob(os.path.join(logs, f"python-core-driver-*_{os.getpid()}.log"))
    logged = os.path.getsize(core_log)
    capfd.readouterr()
    out = ray_model(cands)
    assert capfd.readouterr().err == ""
    with open(core_log, encoding="utf-8", errors="replace") as f:
        f.seek(logged)
        errors = [line for line in f if re.match(r"\[[^\]]* E \d+ \d+\]", line)]
    assert not errors, errors
    same_run(out, ref)
    run = ray_model.last_run
    assert run["mode"] == "rerank" and run["blocks"] == len(cands) // 56
    assert sum(run["blocks_per_worker"].values()) == run["blocks"]
    assert all(f"on host {socket.gethostname()}" in w for w in run["blocks_per_worker"])


def test_listwise_keeps_cross_query_window_batching(ray_cluster, frames):
    """Whole queries per block; within a block the windows of all its queries at one position are one backend call."""
    topics, cands = frames
    def make():
        return pti.ListwiseReranker(pti.FunctionBackend(reverse_windows), window_size=4, stride=2, depth=6)
    local, remote = make(), make()
    ref = local(cands)
    assert local.stats["backend_calls"] == 2  # 2 window positions, every query batched together
    ray_model = pti.on_ray(remote, workers=1, block_rows=2 * 28)
    same_run(ray_model(cands), ref, atol=0)
    blocks = ray_model.last_run["blocks"]
    assert blocks == len(topics) // 2
    assert remote.stats["windows"] == local.stats["windows"] == 2 * len(topics)  # counted in the actors, added here
    assert remote.stats["backend_calls"] == 2 * blocks  # per block: one call per position, not one per query


def test_dense_work_goes_to_the_workers_whole_queries_or_strings(tiny, mini, frames, monkeypatch):
    """A dense model as a reranker (R → R) hands the workers its whole ``_score`` (queries and passages encoded together
    there: mode ``rerank``); a dense retriever its query strings (mode ``queries``, the exact search here). Each gives
    the single-process run. The actors' code (``BlockWorker``, the model pickled to it) runs in this process: which work
    goes where needs no cluster; the tests around send the same blocks (frames, string arrays) to Ray, the BiEncoder
    itself in ``test_families_on_one_actor``."""
    monkeypatch.setattr(cluster, "worker_identity", lambda: "this process")
    topics, cands = frames
    model = pti.BiEncoder(tiny["bert"], verbose=False)
    here = HereBlocks(model, workers=1)
    same_run(here(cands), model(cands))
    assert here.last_run == {"mode": "rerank", "blocks": 4}  # a quarter of the one worker's share each
    index = model.index(mini.get_corpus_iter())
    retriever = HereBlocks(model.retriever(index, num_results=5), workers=1)
    got, want = retriever(topics), model.retriever(index, num_results=5)(topics)
    assert retriever.last_run["mode"] == "queries"
    assert got["qid"].tolist() == want["qid"].tolist() and got["docno"].tolist() == want["docno"].tolist()
    np.testing.assert_allclose(got["score"].to_numpy(), want["score"].to_numpy(), atol=1e-6)


def test_families_on_one_actor(ray_cluster, tiny, qwen, frames, tmp_path):
    """Qwen3Reranker, MxbaiRerankV2, Qwen3Embedding, BiEncoder, FIRST, ReasonRank, Setwise, Rank-R1 and Rank1 travel to
    one actor without their weights (``EachFamily`` pickles them, each without its loaded model; Rank1 without its
    backend's model and tokenizer) and score there as here, each family's own ``transform`` and ``_score`` running on
    the actor: same rows, order, scores, ranks and reasoning. The wrapper's ``_score`` path (the driver's
    ``transform``, the actors' scores and extra outputs) is the same code for every family: MonoT5, FollowIR7B,
    ListwiseReranker and HashScorer (with an extra output, as Rank1's reasoning) take it in the tests around."""
    import tiny_models
    from pyterrier_instruct.testing.models import QWEN_CHAT_TEMPLATE
    from stubs import ZEPHYR_TEMPLATE, with_chat_template
    _, cands = frames
    cands = cands[cands["qid"].isin(cands["qid"].unique()[:2])]
    zephyr = with_chat_template(tiny["mistral"], tmp_path / "zephyr", ZEPHYR_TEMPLATE)
    chat = with_chat_template(qwen["qwen2"], tmp_path / "qwen-chat", QWEN_CHAT_TEMPLATE)
    models = [pti.Qwen3Reranker(qwen["reranker"], verbose=False), pti.MxbaiRerankV2(qwen["qwen2"], verbose=False),
              pti.Qwen3Embedding(qwen["embedding"], verbose=False), pti.BiEncoder(tiny["bert"], verbose=False),
              pti.FIRST(zephyr, window_size=4, stride=2, depth=8, verbose=False),
              pti.ReasonRank(zephyr, window_size=4, stride=2, depth=8, max_output_tokens=3, verbose=False),
              pti.Setwise(tiny["t5"], scoring="likelihood", num_child=3, k=4, verbose=False),
              pti.RankR1(chat, num_child=3, k=2, max_output_tokens=3, verbose=False),
              pti.Rank1(tiny_models.tiny_rank1(tmp_path / "rank1"), max_output_tokens=6, verbose=False)]
    refs = [model(cands) for model in models]
    remote = pti.on_ray(EachFamily(models), workers=1, block_rows=len(cands), verbose=False)
    out = remote(cands)
    assert remote.last_run["mode"] == "frame" and len(remote.last_run["blocks_per_worker"]) == 1
    assert out["family"].tolist() == [n for n, ref in enumerate(refs) for _ in range(len(ref))]
    for n, ref in enumerate(refs):
        got = out[out["family"] == n].reset_index(drop=True)
        assert set(got.columns[got.notna().any()]) == set(ref.columns) | {"family"}, type(models[n]).__name__
        atol = 0 if isinstance(models[n], (pti.Setwise, pti.RankR1)) else 1e-6  # sorts: the same order
        same_run(got[ref.columns], ref, atol=atol)
        if "reasoning" in ref:
            assert got["reasoning"].tolist() == ref["reasoning"].tolist()


def test_corpus_encoding_resumes_and_feeds_flexindex(ray_cluster, tiny, mini, tmp_path, monkeypatch):
    """The driver fails while reading the corpus (after the first wave of 2 shards): those shards are on disk with their
    done-markers; the re-run on the cluster encodes only the rest, and the index equals the in-process one. A FlexIndex
    is then fed from the kept shards without encoding anything. The failed run is the driver's, so its workers' code
    runs in this process (``HereBlocks``: where the first wave was encoded is not what resuming reads). (A retriever's
    queries encoded by the workers: ``test_dense_work_goes_to_the_workers_whole_queries_or_strings``.)"""
    docs = list(mini.get_corpus_iter())
    model = pti.BiEncoder(tiny["bert"])
    path = str(tmp_path / "index")

    def failing():
        yield from docs[:40]
        raise OSError("corpus read failed")

    monkeypatch.setattr(cluster, "worker_identity", lambda: "this process")
    with pytest.raises(OSError, match="corpus read failed"):
        HereBlocks(model, workers=1).index(failing(), path, shard_size=16, wave_shards=2)
    remote = pti.on_ray(model, workers=1)
    from pyterrier_instruct.dense.cache import VectorCache
    shards = VectorCache(str(tmp_path / "index" / "shards"))  # the first wave's 2 shards, each stored whole
    space = shards.space(model.doc_key(), model.revision())
    assert shards.stored(space, model.passage_strings(pd.DataFrame(docs[:32])))
    assert not shards.stored(space, model.passage_strings(pd.DataFrame(docs[32:40])))
    index = remote.index(iter(docs), path, shard_size=16, wave_shards=100, keep_shards=True)
    shards = -(-len(docs) // 16)
    assert remote.last_index == {"shards": shards, "reused": 2, "encoded": shards - 2}
    ref = model.index(iter(docs))
    assert index.docnos.tolist() == ref.docnos.tolist()
    np.testing.assert_allclose(np.asarray(index.vectors), ref.vectors, atol=1e-6)
    index.check(model)

    from pyterrier_dr import FlexIndex
    topics = mini.get_topics()
    want = model.retriever(index, num_results=5)(topics)
    flex = FlexIndex(str(tmp_path / "flex.flex"))
    flex.indexer().index(remote.encode_corpus(iter(docs), str(tmp_path / "index" / "shards"), shard_size=16))
    assert remote.last_index == {"shards": shards, "reused": shards, "encoded": 0}  # read from the kept shards
    got = (model >> flex.np_retriever(num_results=5))(topics)
    assert got["docno"].tolist() == want["docno"].tolist()


def with_vllm_stand_in(tmp_path, make, frame,
                       shim_code: str = "from fake_vllm import LLM, SamplingParams  # noqa: F401\n"):
    """``make()(frame)`` in this process with the stand-in of tests/fake_vllm.py as ``vllm``, and the Ray worker
    environment (``PYTHONPATH``) in which ``import vllm`` gives the module ``shim_code``."""
    import sys
    import fake_vllm
    shim = tmp_path / "shim" / "vllm"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(shim_code)
    sys.modules["vllm"] = fake_vllm
    try:
        ref = make()(frame)
    finally:
        del sys.modules["vllm"]
    path = [str(shim.parent), os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]
    return ref, {"PYTHONPATH": os.pathsep.join(p for p in path if p)}


def test_vllm_on_ray_sizes_reach_the_engine_and_same_run(ray_cluster, tiny, frames, tmp_path):
    """FollowIR7B(backend='vllm') on an actor with its own engine (the stand-in of tests/fake_vllm.py, which runs the
    tiny model and records each engine's arguments): vLLM's ``tensor_parallel_size``/``pipeline_parallel_size`` pass
    through to the engine inside the actor, one engine per actor (not per block), block by block the same run as in one
    process; the actor's engine counts come back to the driver's backend. (Several actors, each with its own copy of
    the transformer: test_pointwise_blocks_equal_single_process; each actor's import of vLLM is ~10 CPU-seconds.)"""
    import json
    shim = (  # the stand-in, recording each engine's arguments in $PTI_VLLM_LOG
        "import json, os, uuid\n"
        "import fake_vllm\n"
        "from fake_vllm import SamplingParams\n"
        "class LLM(fake_vllm.LLM):\n"
        "    def __init__(self, model, **kwargs):\n"
        "        super().__init__(model, **kwargs)\n"
        "        with open(os.path.join(os.environ['PTI_VLLM_LOG'], uuid.uuid4().hex + '.json'), 'w') as f:\n"
        "            json.dump({k: v for k, v in self.init_args.items()\n"
        "                       if isinstance(v, (int, str, float, bool))}, f)\n")
    log = tmp_path / "engines"
    log.mkdir()
    make = lambda: pti.FollowIR7B(tiny["mistral"], backend="vllm", verbose=False,  # noqa: E731
                                  backend_options={"tensor_parallel_size": 2, "pipeline_parallel_size": 2})
    cands = frames[1][frames[1]["qid"].isin(frames[1]["qid"].unique()[:4])]
    ref, env = with_vllm_stand_in(tmp_path, make, cands, shim)
    env["PTI_VLLM_LOG"] = str(log)
    remote = pti.on_ray(make(), workers=1, block_rows=2 * 28, runtime_env={"env_vars": env})
    same_run(remote(cands), ref, atol=1e-6)
    engines = [json.loads(p.read_text()) for p in log.glob("*.json")]
    assert remote.last_run["blocks"] == 2 and sum(remote.last_run["blocks_per_worker"].values()) == 2
    # one engine per actor, built on its first block and kept for the next
    assert len(engines) == len(remote.last_run["blocks_per_worker"]) == 1
    assert all(e["tensor_parallel_size"] == 2 and e["pipeline_parallel_size"] == 2 for e in engines)
    # the actor's engine counts come back to the driver's backend: every row one request, the prefix cache used
    stats = remote.transformer.backend.stats
    assert stats["requests"] == len(cands) and 0 < stats["cached_tokens"] < stats["prompt_tokens"]


def test_openai_backend_keeps_one_global_concurrency_limit(ray_cluster, frames):
    """Two actors share the backend's ``concurrency`` (2): each is allowed one request in flight, so the server never
    sees more than 2 at once, although each actor's backend call holds several windows."""
    _, cands = frames
    state = {"now": 0, "most": 0}
    lock = threading.Lock()

    def answer(body):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        n = max(map(int, re.findall(r"\[(\d+)\]", " ".join(m["content"] for m in body["messages"]))))
        return 200, {"choices": [{"message": {"content": " > ".join(f"[{i}]" for i in range(n, 0, -1))}}]}

    server = ChatServer(answer)
    try:
        os.environ[KEY_ENV] = "sk-ray-test"
        def make():
            return pti.RankGPT("gpt-4o", base_url=server.url, api_key_env=KEY_ENV, window_size=4, stride=2, depth=6,
                               backend_options={"concurrency": 2})
        part = cands[cands["qid"].isin(cands["qid"].unique()[:8])]
        ref = make()(part)
        state["most"] = 0
        remote = pti.on_ray(make(), workers=2, block_rows=4 * 28, runtime_env={"env_vars": {KEY_ENV: "sk-ray-test"}})
        same_run(remote(part), ref, atol=0)
        assert remote.last_run["workers"] == 2 and 1 <= state["most"] <= 2
    finally:
        server.close()
        os.environ.pop(KEY_ENV, None)


def test_killed_actor_is_restarted_and_its_blocks_retried(ray_cluster, frames, tmp_path):
    """The only actor exits in the middle of the run (on the block holding the victim query); Ray restarts it and
    retries its unfinished blocks: every row comes back once, equal to the clean run, its extra output (``reasoning``,
    as rank1's) with its scores."""
    _, cands = frames
    ref = HashScorer()(cands)
    victim = cands["qid"].unique()[5]
    remote = pti.on_ray(HashScorer(kill_dir=str(tmp_path), victim=victim), workers=1, block_rows=28)
    out = remote(cands)
    killed = (tmp_path / "killed").read_text()
    assert killed.isdigit()  # an actor really died
    same_run(out, ref, atol=0)
    assert out["reasoning"].tolist() == ref["reasoning"].tolist()
    assert not out.duplicated(["qid", "docno"]).any() and len(out) == len(cands)
    done = remote.last_run["blocks_per_worker"]
    assert sum(done.values()) == remote.last_run["blocks"] == cands["qid"].nunique()
    assert any(f"(pid {killed})" not in w for w in done)  # restarted: a new process finished the victim's block


def test_worker_without_the_model_files_names_itself_and_the_path(ray_cluster, tiny, frames, tmp_path):
    folder = tmp_path / "monot5"
    shutil.copytree(tiny["t5"], folder)
    remote = pti.on_ray(pti.MonoT5(str(folder)), workers=1)
    shutil.rmtree(folder)  # gone before any worker starts
    with pytest.raises(Exception) as err:
        remote(frames[1])
    text = str(err.value)
    assert str(folder) in text and "model_name_or_path of MonoT5" in text
    assert re.search(r"Ray worker actor \w+ \(pid \d+\) on host " + re.escape(socket.gethostname()), text), text


def test_cli_ray_runs_and_keeps_saved_run_keys(ray_cluster, tiny, tmp_path, capsys):
    """``pyterrier-instruct followir --ray --workers 1``: the reranker runs on the cluster; a later run without
    ``--ray`` finds the same saved run (the key is the reranker's, not the wrapper's) and prints the same table."""
    from pyterrier_instruct.reproduce import followir
    out = tmp_path / "out"
    argv = ["--dataset", "instruct-mini", "--systems", "monot5-base", "--monot5-base", tiny["t5"], "--out", str(out),
            "--quiet"]
    assert followir.main(argv + ["--ray", "--workers", "1"]) == 0
    first = capsys.readouterr().out
    runs = sorted((out / "runs" / "instruct-mini" / "monot5-base").glob("*.parquet"))
    assert len(runs) == 1
    stamp = runs[0].stat().st_mtime_ns
    assert followir.main(argv) == 0
    second = capsys.readouterr().out
    assert sorted((out / "runs" / "instruct-mini" / "monot5-base").glob("*.parquet")) == runs
    assert runs[0].stat().st_mtime_ns == stamp
    table = lambda text: text.split("written to")[0]  # noqa: E731
    assert table(first) == table(second)


def test_cluster_listens_on_loopback_only(ray_cluster):
    """Every socket of every Ray process of the session's cluster (GCS, raylet, agents, workers) and of this driver is
    on the loopback interface."""
    import psutil
    node = ray_cluster._private.worker._global_node
    pids = {os.getpid()}
    for procs in node.all_processes.values():
        for info in procs:
            pids.add(info.process.pid)
    for pid in list(pids):
        try:
            pids.update(c.pid for c in psutil.Process(pid).children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    loopback = ("127.", "::ffff:127.", "::1")
    seen = []
    for pid in pids:
        try:
            connections = psutil.Process(pid).net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for c in connections:
            for addr in (c.laddr, c.raddr):
                if addr:
                    seen.append((pid, addr.ip))
    assert len({p for p, _ in seen}) >= 3  # the GCS, the raylet and this driver at least
    assert all(ip.startswith(loopback) for _, ip in seen), [x for x in seen if not x[1].startswith(loopback)]

