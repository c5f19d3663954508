"""A toy scorer and retriever for tests/test_store.py, and the children it starts (``python -c``, this folder on the
path): each fills one cache folder, in step with a second child."""
import json
import os
import sys
import time

import pandas as pd
import pyterrier as pt

import pyterrier_instruct as pti

DOCS = pd.DataFrame({"docno": [f"d{j}" for j in range(120)], "text": ["x" * (j % 50) for j in range(120)]})
TOPICS = pd.DataFrame({"qid": [f"q{i}" for i in range(40)], "query": [f"query number {i}" for i in range(40)]})
#: 400 rows over 4 queries and 100 docnos
ROWS = pd.DataFrame({"qid": [f"q{i % 4}" for i in range(400)], "query": [f"query {i % 4}" for i in range(400)],
                     "docno": [f"d{i // 4}" for i in range(400)]})


def retrieve(q: pd.DataFrame) -> pd.DataFrame:
    """Every document for each query, scored from the docno and the query text (never the qid)."""
    run = q.merge(DOCS, how="cross")
    n = run["query"].str.split().str[-1].astype(int) + 1
    return pt.model.add_ranks(run.assign(score=(run["docno"].str[1:].astype(int) * n % 97).astype(float)))


def score(df: pd.DataFrame) -> pd.Series:
    return df["docno"].str[1:].astype(float) + df["query"].str.split().str[-1].astype(float) / 10


def together(folder: str, me: str, other: str) -> None:
    """Waits (bounded) until the other child is ready too, so both work at the same time."""
    open(os.path.join(folder, me), "w").close()
    for _ in range(12000):
        if os.path.exists(os.path.join(folder, other)):
            break
        time.sleep(0.005)


def fill_scores(folder: str, me: str, other: str) -> None:
    """Scores overlapping slices of ROWS through one ScorerCache (child "a" forwards, "b" backwards), then all of
    ROWS; writes the rows it computed and the final scores to ``<me>.json``."""
    computed = []
    scorer = pt.apply.doc_score(lambda df: computed.extend(zip(df.qid, df.docno)) or score(df), batch_size=1000)
    cache = pti.ScorerCache(os.path.join(folder, "cache"), scorer, identity="toy", verbose=False)
    together(folder, me, other)
    for start in (range(0, 400, 50) if me == "a" else range(350, -1, -50)):
        cache(ROWS.iloc[start:start + 100])
    final = cache(ROWS)
    with open(os.path.join(folder, me + ".json"), "w") as f:
        json.dump({"computed": computed, "score": final["score"].tolist()}, f)


def fill_runs(folder: str, me: str, other: str, which: str) -> None:
    """Retrieves TOPICS one query per call (one commit each) through one RetrieverCache, printing each query's number
    once its call returned: the even ones (``which="0"``), the odd ones ("1") or all ("all"); ``other="-"``: alone."""
    cache = pti.RetrieverCache(os.path.join(folder, "cache"), pt.apply.generic(retrieve), identity="toy", verbose=False)
    if other != "-":
        together(folder, me, other)
    for i in range(int(which), 40, 2) if which in ("0", "1") else range(40):
        cache(TOPICS.iloc[[i]])
        print(i, flush=True)


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
