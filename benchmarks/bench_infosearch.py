"""Benchmark: the vectorised InfoSearch and Robustness measures against a per-document Python loop.

Builds seeded synthetic data and times three paths of ``pyterrier_instruct.measures`` against one
plain-Python loop that implements the same rules (the InfoSearch reference code's WISE/SICR rules) with dicts and
``sorted``:

- ``infosearch_eval`` (the function; WISE 2024, SICR code variant, ties in run order);
- ``ir_measures.calc_aggregate([WISE, SICR, InfoSearch_pMRR], ...)`` on paired-qid frames
  (``<base>-og`` / ``<base>-changed`` / ``<base>-reversed``);
- ``robustness_eval`` (Robustness@10 and mean nDCG@10).

InfoSearch data (default 300 instances x 100 candidates): 4 documents labelled 1 in the og qrels;
in the changed qrels one of them (the gold) keeps 1 and the other 3 get 0 (the negatives); the 96
other candidates are unjudged. The ori, ins and rev runs score every candidate (rows shuffled per
query, so run order decides ties); ``--drop N`` removes N documents (often judged ones) from each
ins and rev run to exercise the missing-document rule. Robustness data: 50 groups x 6 instances
(qids ``g<g>_<n>``), 100 candidates each, one relevant document labelled 1 or 2. Each data set is
run twice: with full-precision normal scores, and with scores rounded to ``--decimals`` (ties).

Input conversion is excluded from both timings: the package gets DataFrames, the loop gets
``{qid: {docno: score}}`` dicts (same order). Every reported value must agree to 1e-9.

Run it with ``.venv/bin/python benchmarks/bench_infosearch.py [--seed N] [--repeat N]
[--instances N] [--candidates N] [--groups N] [--per-group N] [--decimals N] [--drop N]``.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import time

import ir_measures
import numpy as np
import pandas as pd

from pyterrier_instruct.measures import (
    SICR,
    WISE,
    InfoSearch_pMRR,
    infosearch_eval,
    robustness_eval,
)

TOL = 1e-9
K_WISE = 20  # the WISE rank horizon
N_JUDGED = 4  # og-positive documents per instance: 1 gold + 3 negatives


# ----------------------------------------------------------------------------------------------
# synthetic data
# ----------------------------------------------------------------------------------------------

def _score(x: np.ndarray, decimals) -> np.ndarray:
    return x if decimals is None else np.round(x, decimals)


def make_infosearch(n_instances: int, n_candidates: int, seed: int, decimals, drop: int):
    """(ori run, ins run, rev run, og qrels, changed qrels) as frames; run rows shuffled per query."""
    rng = np.random.default_rng(seed)
    runs = {"ori": [], "ins": [], "rev": []}
    og_rows, ch_rows = [], []
    for q in range(n_instances):
        qid = f"q{q}"
        docnos = [f"d{q}_{i}" for i in range(n_candidates)]
        judged = rng.choice(n_candidates, size=N_JUDGED, replace=False)  # og-qrels order; gold anywhere in it
        gold = int(judged[rng.integers(N_JUDGED)])
        negatives = [int(j) for j in judged if j != gold]
        og_rows.extend((qid, docnos[j], 1) for j in judged)
        ch_rows.extend((qid, docnos[j], 1 if j == gold else 0) for j in rng.permutation(judged))
        base = rng.normal(size=n_candidates)
        ins = base + rng.normal(scale=0.7, size=n_candidates)
        rev = base + rng.normal(scale=0.7, size=n_candidates)
        ins[gold] += rng.normal(0.8, 1.0)  # the instruction usually lifts the gold...
        ins[negatives] -= rng.uniform(0.0, 1.5, size=len(negatives))  # ...and pushes the negatives down
        rev[gold] -= rng.normal(0.8, 1.0)
        scores = {"ori": _score(base, decimals), "ins": _score(ins, decimals), "rev": _score(rev, decimals)}
        others = rng.choice(np.setdiff1d(np.arange(n_candidates), judged), size=6, replace=False)
        pool = np.concatenate([judged, others])
        for name, s in scores.items():
            dropped = set() if name == "ori" or drop == 0 else set(rng.choice(pool, size=drop, replace=False).tolist())
            runs[name].extend((qid, docnos[i], float(s[i])) for i in rng.permutation(n_candidates)
                              if int(i) not in dropped)
    cols = ["qid", "docno", "score"]
    frames = {name: pd.DataFrame(rows, columns=cols) for name, rows in runs.items()}
    qcols = ["qid", "docno", "label"]
    return (frames["ori"], frames["ins"], frames["rev"], pd.DataFrame(og_rows, columns=qcols),
            pd.DataFrame(ch_rows, columns=qcols))


def make_robustness(n_groups: int, per_group: int, n_candidates: int, seed: int, decimals):
    """(run frame, qrels frame): qids ``g<g>_<n>``, one relevant document (label 1 or 2) per instance."""
    rng = np.random.default_rng(seed + 1)
    run_rows, qrel_rows = [], []
    docnos = [f"d{i}" for i in range(n_candidates)]  # "d9" > "d10": docno ties are not numeric order
    for g in range(n_groups):
        for n in range(per_group):
            qid = f"g{g}_{n}"
            rel = int(rng.integers(n_candidates))
            qrel_rows.append((qid, docnos[rel], int(rng.integers(1, 3))))
            s = rng.normal(size=n_candidates)
            s[rel] += rng.normal(1.5, 1.0)
            s = _score(s, decimals)
            run_rows.extend((qid, docnos[i], float(s[i])) for i in rng.permutation(n_candidates))
    return (pd.DataFrame(run_rows, columns=["qid", "docno", "score"]),
            pd.DataFrame(qrel_rows, columns=["qid", "docno", "label"]))


def to_dict(frame: pd.DataFrame, value: str) -> dict:
    """``{qid: {docno: value}}`` in row order (insertion order = the run's tie order)."""
    out: dict = {}
    for qid, docno, v in zip(frame["qid"], frame["docno"], frame[value]):
        out.setdefault(qid, {})[docno] = v
    return out


def to_paired(ori, ins, rev, og_qrels, ch_qrels):
    """The ir_measures inputs in the paired-qid convention (``<base>-og/-changed/-reversed``)."""
    run = pd.concat([r.assign(qid=r["qid"] + f"-{v}") for r, v in ((ori, "og"), (ins, "changed"), (rev, "reversed"))],
                    ignore_index=True)
    qrels = pd.concat([og_qrels.assign(qid=og_qrels["qid"] + "-og"), ch_qrels.assign(qid=ch_qrels["qid"] + "-changed")],
                      ignore_index=True)
    return (run.rename(columns={"qid": "query_id", "docno": "doc_id"}),
            qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}))


# ----------------------------------------------------------------------------------------------
# the per-document loop (the InfoSearch reference code's rules)
# ----------------------------------------------------------------------------------------------

def loop_ranks(run: dict) -> dict:
    """``{docno: 1-based rank}``: stable sort on score alone, so ties keep the run's insertion order."""
    return {docno: r for r, docno in enumerate(sorted(run, key=run.__getitem__, reverse=True), start=1)}


def loop_rank_score(run: dict, ranks: dict, docno: str):
    """(rank, score); a document missing from the run has rank len(run) + 1 and score 0."""
    if docno in run:
        return ranks[docno], run[docno]
    return len(run) + 1, 0


def loop_wise_2024(o: int, i: int, r: int, n: int) -> float:
    if i <= o < r:  # reward
        if o < n and i == 1:
            return 1.0
        if o <= K_WISE:
            return (1 - (o - i) / K_WISE) / math.sqrt(i)
        return 0.01
    if o <= i:  # penalty (the 2024 "-1" rule tests i < o < r, inside the reward: never fires)
        return (o - i) / i
    return (r - o) / o


def loop_ideal_wise_2024(o: int, n: int) -> float:
    return loop_wise_2024(o, 1, o + 1, n)


def loop_sicr_success(o, i, r, s_o, s_i, s_r) -> bool:
    if o > 1:
        return o > i and r > o and s_i > s_o > s_r
    return i == 1 and r > 1 and s_i >= s_o > s_r


def loop_pmrr_doc(o: int, n: int) -> float:
    return n / o - 1 if n <= o else 1 - o / n


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def loop_infosearch(ori: dict, ins: dict, rev: dict, og_qrels: dict, ch_qrels: dict) -> dict:
    """WISE (2024), ideal WISE, SICR (code variant: last gold decides) and InfoSearch p-MRR."""
    per_query = {"WISE": {}, "ideal_WISE": {}, "SICR": {}, "p-MRR": {}}
    for qid, og_labels in og_qrels.items():
        ch_labels = ch_qrels[qid]
        positives = [d for d, lab in og_labels.items() if lab == 1 and ch_labels[d] == 1]
        negatives = [d for d, lab in og_labels.items() if ch_labels[d] == 0 and lab != ch_labels[d]]
        n = len(positives) + len(negatives)
        runs = (ori[qid], ins[qid], rev[qid])
        ranks = [loop_ranks(run) for run in runs]
        if positives:
            wise, ideal, success = [], [], False
            for d in positives:
                (o, s_o), (i, s_i), (r, s_r) = (loop_rank_score(run, rk, d) for run, rk in zip(runs, ranks))
                wise.append(loop_wise_2024(o, i, r, n))
                ideal.append(loop_ideal_wise_2024(o, n))
                success = loop_sicr_success(o, i, r, s_o, s_i, s_r)  # reset per gold: the last one decides
            per_query["WISE"][qid] = mean(wise)
            per_query["ideal_WISE"][qid] = mean(ideal)
            per_query["SICR"][qid] = (1.0 if success else 0.0) / len(positives)
        if negatives:
            per_query["p-MRR"][qid] = mean(
                loop_pmrr_doc(loop_rank_score(runs[0], ranks[0], d)[0], loop_rank_score(runs[1], ranks[1], d)[0])
                for d in negatives)
    return {"overall": {m: mean(v.values()) for m, v in per_query.items()}, "per_query": per_query}


def loop_ndcg(run: dict, labels: dict, k: int) -> float:
    """trec_eval nDCG@k: score descending, ties by docno descending; linear gain; IDCG from labels > 0."""
    top = sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:k]
    dcg = sum(labels.get(docno, 0) / math.log2(rank + 1) for rank, (docno, _) in enumerate(top, start=1))
    ideal = sorted((lab for lab in labels.values() if lab > 0), reverse=True)[:k]
    idcg = sum(lab / math.log2(rank + 1) for rank, lab in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def loop_robustness(run: dict, qrels: dict, k: int = 10) -> dict:
    ndcg = {qid: loop_ndcg(run[qid], labels, k) for qid, labels in qrels.items() if labels}
    worst: dict = {}
    for qid, value in ndcg.items():
        group = qid.split("_", 1)[0]
        worst[group] = min(worst.get(group, value), value)
    return {"robustness": mean(worst.values()), "ndcg": mean(ndcg.values()), "per_query": ndcg}


# ----------------------------------------------------------------------------------------------
# comparison and timing
# ----------------------------------------------------------------------------------------------

def agree(label: str, ours: dict, loop: dict) -> None:
    for key, value in loop.items():
        assert abs(ours[key] - value) <= TOL, f"{label}: {key} ours={ours[key]!r} loop={value!r}"


def agree_per_query(label: str, ours: dict, loop: dict) -> None:
    assert ours.keys() == loop.keys(), f"{label}: different query sets"
    agree(label, ours, loop)


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_case(args: argparse.Namespace, decimals) -> list:
    """Checks ours against the loop on one data set, then times them: ``[(path, ours s, loop s, values)]``."""
    ori, ins, rev, og_q, ch_q = make_infosearch(args.instances, args.candidates, args.seed, decimals, args.drop)
    ori_d, ins_d, rev_d = to_dict(ori, "score"), to_dict(ins, "score"), to_dict(rev, "score")
    og_d, ch_d = to_dict(og_q, "label"), to_dict(ch_q, "label")
    paired_run, paired_qrels = to_paired(ori, ins, rev, og_q, ch_q)
    rb_run, rb_qrels = make_robustness(args.groups, args.per_group, args.candidates, args.seed, decimals)
    rb_run_d, rb_qrels_d = to_dict(rb_run, "score"), to_dict(rb_qrels, "label")
    tag = "float" if decimals is None else f"round{decimals}"

    def ours_fn():
        return infosearch_eval(ori, ins, rev, og_qrels=og_q, changed_qrels=ch_q, version="2024", sicr="code",
                               ties="input", warn=False)

    def irm_fn():
        return ir_measures.calc_aggregate([WISE, SICR, InfoSearch_pMRR], paired_qrels, paired_run)

    def loop_fn():
        return loop_infosearch(ori_d, ins_d, rev_d, og_d, ch_d)

    def loop_frames_fn():  # the same loop when the input is PyTerrier frames, as ours gets it
        return loop_infosearch(to_dict(ori, "score"), to_dict(ins, "score"), to_dict(rev, "score"),
                               to_dict(og_q, "label"), to_dict(ch_q, "label"))

    def rb_loop_frames_fn():
        return loop_robustness(to_dict(rb_run, "score"), to_dict(rb_qrels, "label"), 10)

    def rb_fn():
        return robustness_eval(rb_run, rb_qrels, k=10)

    def rb_loop_fn():
        return loop_robustness(rb_run_d, rb_qrels_d, 10)

    # correctness first: overall and per-query values
    loop, ours = loop_fn(), ours_fn()
    agree(f"infosearch_eval/{tag}", ours["overall"], loop["overall"])
    for m, values in loop["per_query"].items():
        agree_per_query(f"infosearch_eval/{tag}/{m}", ours["per_query"][m], values)
    irm = irm_fn()
    agree(f"ir_measures/{tag}", {"WISE": irm[WISE], "SICR": irm[SICR], "p-MRR": irm[InfoSearch_pMRR]},
          {m: loop["overall"][m] for m in ("WISE", "SICR", "p-MRR")})
    rb_loop, rb = rb_loop_fn(), rb_fn()
    agree(f"robustness_eval/{tag}", rb, {"robustness": rb_loop["robustness"], "ndcg": rb_loop["ndcg"]})
    agree_per_query(f"robustness_eval/{tag}/nDCG@10", rb["per_query"], rb_loop["per_query"])

    t_loop, t_rb_loop = median_time(loop_fn, args.repeat), median_time(rb_loop_fn, args.repeat)
    t_loop_f, t_rb_loop_f = median_time(loop_frames_fn, args.repeat), median_time(rb_loop_frames_fn, args.repeat)
    ov = loop["overall"]
    return [
        ("infosearch_eval", median_time(ours_fn, args.repeat), t_loop, t_loop_f,
         f"WISE {ov['WISE']:+.6f} ideal {ov['ideal_WISE']:.6f} SICR {ov['SICR']:.6f} p-MRR {ov['p-MRR']:+.6f}"),
        ("ir_measures", median_time(irm_fn, args.repeat), t_loop, t_loop_f, "WISE, SICR, InfoSearch_pMRR: same values"),
        ("robustness_eval", median_time(rb_fn, args.repeat), t_rb_loop, t_rb_loop_f,
         f"Robustness@10 {rb_loop['robustness']:.6f} nDCG@10 {rb_loop['ndcg']:.6f}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--per-group", type=int, default=6)
    parser.add_argument("--decimals", type=int, default=1, help="rounding of the coarse (tied) scores")
    parser.add_argument("--drop", type=int, default=0, help="documents removed from each ins/rev run per query")
    args = parser.parse_args()

    print(f"cpus={os.cpu_count()} python={platform.python_version()} pandas={pd.__version__} "
          f"ir_measures={ir_measures.__version__}")
    print(f"data: InfoSearch {args.instances} instances x {args.candidates} candidates ({N_JUDGED} og-positive: "
          f"1 gold + {N_JUDGED - 1} negatives; drop={args.drop}); Robustness {args.groups} groups x "
          f"{args.per_group} instances x {args.candidates} candidates; seed={args.seed}; median of {args.repeat}")
    print("loop s: the per-document loop on {qid: {docno: score}} dicts built beforehand (untimed); "
          "loop+conv s: the same loop including building those dicts from the frames ours reads")
    header = (f"{'scores':<8} {'path':<15} {'ours s':>8} {'loop s':>8} {'loop/ours':>9} {'loop+conv s':>11} "
              f"{'(loop+conv)/ours':>16}  values")
    print(header)
    print("-" * len(header))
    ratios = {}
    for decimals in (None, args.decimals):
        tag = "float" if decimals is None else f"round{decimals}"
        for path, t_ours, t_loop, t_conv, values in bench_case(args, decimals):
            ratios.setdefault(path, []).append((t_loop / t_ours, t_conv / t_ours))
            print(f"{tag:<8} {path:<15} {t_ours:>8.4f} {t_loop:>8.4f} {t_loop / t_ours:>8.2f}x {t_conv:>11.4f} "
                  f"{t_conv / t_ours:>15.2f}x  {values}")
    summary = ", ".join(f"{path} {'/'.join(f'{a:.2f}' for a, _ in rs)}x (with conversion "
                        f"{'/'.join(f'{b:.2f}' for _, b in rs)}x)" for path, rs in ratios.items())
    print(f"OK: ours and the loop agree to {TOL:g} on every value; loop/ours (float/round{args.decimals}): {summary}")


if __name__ == "__main__":
    main()
