"""The reproduction of the instruction-following retrieval papers: one module per benchmark, each a short composition
of the package's public API, behind one console entry point (``pyterrier-instruct <command>``, :mod:`.cli`) and each also
runnable as ``python -m pyterrier_instruct.reproduce.<module>``.

- :mod:`.common`: what the pipelines share — the one command line (:func:`parser`, :func:`parse`), opening datasets,
  failing fast on missing weights, saving runs, running rows on a Ray cluster (:func:`on_cluster`, ``--ray``),
  printing the table beside the published numbers (:func:`finish`);
- :mod:`.baselines`: the baselines that run anywhere (:func:`followir_baselines`; the neural ones join when their
  weights are local, :func:`pyterrier_instruct._hub.local_model`);
- :mod:`.demo`, :mod:`.followir`, :mod:`.infosearch`, :mod:`.ifir`, :mod:`.instructir`, :mod:`.beir_prompts`: the
  pipelines (see ``README.md`` in this folder).

Importing this package imports no model library; the pipelines import theirs when a row is built.
"""
from .baselines import followir_baselines
from .common import (FIRST_STAGES, ROWS_2025, Row, check_models, dataset_label, finish, first_stage_bm25, full_retrieval, model_options, on_cluster,
                     open_dataset, open_datasets, parse, parser, rank1, rerankers_2025, saved, selected)

__all__ = ["Row", "parser", "parse", "dataset_label", "open_dataset", "open_datasets", "model_options", "check_models",
           "saved", "finish", "selected", "on_cluster", "first_stage_bm25", "FIRST_STAGES", "full_retrieval", "followir_baselines",
           "ROWS_2025", "rerankers_2025", "rank1"]
