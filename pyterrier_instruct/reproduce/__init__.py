"""The reproduction of the instruction-following retrieval papers: one module per benchmark, each a short composition of
the package's public API, behind one console entry point (``pyterrier-instruct <command>``, :mod:`.cli`) and each also
runnable as ``python -m pyterrier_instruct.reproduce.<module>``.

- what the pipelines share: :mod:`.arguments`, the one command line (:func:`parser`, :func:`parse`) and opening
  datasets; :mod:`.systems`, the shared rows, failing fast on missing weights, saving runs, running rows on a Ray
  cluster (:func:`on_cluster`, ``--ray``); :mod:`.output`, the table beside the published numbers (:func:`finish`) and
  the provenance ``report.json`` records;
- :mod:`.baselines`: the baselines that run anywhere (:func:`followir_baselines`; the neural ones join when their
  weights are local, :func:`pyterrier_instruct._hub.local_model`);
- :mod:`.demo`, :mod:`.followir`, :mod:`.infosearch`, :mod:`.ifir`, :mod:`.instructir`, :mod:`.beir_prompts`: the
  pipelines (see ``README.md`` in this folder).

Importing this package imports no model library; the pipelines import theirs when a row is built.
"""
from .arguments import FIRST_STAGES, Row, dataset_label, model_options, open_dataset, open_datasets, parse, parser
from .baselines import followir_baselines
from .output import finish
from .systems import (ROWS_2025, check_models, first_stage_bm25, full_retrieval, on_cluster, rank1, rerankers_2025,
                      row_name, saved, selected)

__all__ = ["Row", "parser", "parse", "dataset_label", "open_dataset", "open_datasets", "model_options", "check_models",
           "saved", "finish", "selected", "on_cluster", "first_stage_bm25", "FIRST_STAGES", "full_retrieval",
           "followir_baselines", "ROWS_2025", "rerankers_2025", "rank1", "row_name"]
