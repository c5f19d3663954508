"""Tiny paired (og/changed) topics, qrels and a run, for the experiment tests and the children they start: this module
imports only numpy, pandas and the package (not pytest or scipy), so a child pays for nothing else."""
import numpy as np
import pandas as pd

import pyterrier_instruct as pti


def tiny_paired(n=4):
    """``n`` base queries of 3 documents each (d1 relevant under og only), a random run over them, and the topics."""
    qrels = pti.paired_qrels({v: pd.DataFrame({"qid": [str(q) for q in range(n) for _ in range(3)],
                                               "docno": [f"d{j}" for _ in range(n) for j in range(3)],
                                               "label": [1, 1 if v == "og" else 0, 0] * n}) for v in ("og", "changed")})
    rng = np.random.default_rng(0)
    run = qrels[["qid", "docno"]].assign(score=rng.random(len(qrels)), instruction="i")
    topics = pd.DataFrame({"qid": pd.unique(qrels["qid"]), "query": "q", "instruction": "i"})
    return topics, qrels, run
