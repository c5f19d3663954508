"""Every dataset id the plugin serves (``instruct/<family>/<name>`` in ir_datasets): where its files come from (hub
repository, pinned revision), which layout reader opens them, the benchmark's standard measure and its published size.

Plain data, no heavy imports: the ir_datasets registration and the PyTerrier provider both read it.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple


from .entry import Entry  # noqa: F401 - the record of every id below (its own module: catalog.py reads it too)


#: Families that define no candidate lists: they are evaluated by full retrieval over the corpus.
FULL_RETRIEVAL = frozenset({"ifir", "instructir", "beir", "bright", "mair", "limit", "r2med", "freshstack",
                            "crumb", "bright-pro"})


_FOLLOWIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels_og/*", "qrels_changed/*", "top_ranked.jsonl", "README.md")
_MTEB_FILES = ("corpus/*", "queries/*", "instruction/*", "data/*", "qrels/*", "default/*", "top_ranked/*",
               "qrel_diff/*", "README.md")
_INFOSEARCH_FILES = ("corpus.jsonl", "queries.jsonl", "qrels_og/*", "qrels_changed/*", "qrels_reversed/*",
                     "empty_scores.json", "README.md")

DATASETS: Dict[str, Entry] = {
    "instruct-mini": Entry("bundled", None, None, "AP@1000",
                           "10 queries × 2 variants, 280 docs, 28 candidates per query",
                           "CC-BY-4.0 (written for this package)"),
    "infosearch-mini": Entry("infosearch", None, None, "nDCG@10",
                             "12 instances × 3 modes (format dimension), 20 docs, 5 candidates per instance",
                             "CC-BY-4.0 (written for this package)"),
}

_FOLLOWIR = {  # name: (original repo rev, mteb repo rev, measure, size, mteb size)
    "robust04": ("a5a1c4fe2bc528ac12e83f8cdf82178da85d2f1d", "0a3efedfcac0a7f859c46cff3a0fac0f8747b28f", "AP@1000",
                 "52 queries × 2 variants, 47,492 docs, 1,000 candidates per query"),
    "news21": ("e0144086b45fe31ac125e9ac1a83b6a409bb6ca6", "39db677749b3b783bb277d0e2d4712f5f133f52b", "nDCG@5",
               "32 queries × 2 variants, 30,921 docs, 1,000 candidates per query"),
    "core17": ("e39ff896cf3efbbdeeb950e6bd7c79f266995b07", "7030c7efc3585d9020f243b12862997889243b78", "AP@1000",
               "20 queries × 2 variants, 19,899 docs, 1,000 candidates per query"),
}
for _n, (_rev, _mrev, _m, _size) in _FOLLOWIR.items():
    DATASETS[f"followir/{_n}"] = Entry("followir", f"jhu-clsp/{_n}-instructions", _rev, _m, _size, "MIT",
                                       allow=_FOLLOWIR_FILES)
    DATASETS[f"followir/{_n}/mteb"] = Entry("followir-mteb", f"jhu-clsp/{_n}-instructions-mteb", _mrev, _m, _size,
                                            "MIT", allow=_MTEB_FILES)

for _lang, _rows, _docs in (("fas", 80, "41,189"), ("rus", 80, "39,326"), ("zho", 86, "41,120")):
    DATASETS[f"mfollowir/{_lang}"] = Entry(
        "mfollowir", "jhu-clsp/mFollowIR-parquet-mteb", "09eecbe45c54b4a6dfb8e68e345cae77337768e2", "nDCG@20",
        f"{_rows} query rows (og + changed), ≈{_docs} docs, 1,000 candidates per query", "ODC-By", lang=_lang,
        allow=tuple(f"{c}-{_lang}/*" for c in ("corpus", "queries", "instruction", "default", "top_ranked",
                                               "qrel_diff"))
        + ("README.md",))

DATASETS["instructir"] = Entry(
    "instructir", "kaist-ai/InstructIR", None, "Robustness@10",
    "9,906 query × instruction instances over 1,267 base queries, 16,072 docs, 1 relevant doc per instance", "MIT",
    allow=("corpus.jsonl", "queries.jsonl", "qrels/*", "README.md"))

for _dim, _repo, _rev, _n in (
        ("audience", "Audience-v1", "9bc73db6f3ca419c3fdb4d98e1f0864411756fc8", "210 instances × 3 modes, 840 docs"),
        ("keyword", "Clarity-v1", "4c1892c874d09877c00243fac16452f3353039aa", "288 instances × 3 modes, 1,152 docs"),
        ("format", "Format-v1", "63b53c9e117fa16a469026650861db77f25ab823", "300 instances × 3 modes, 1,200 docs"),
        ("language", "Language-v1", "d4915806662132e118e8df242aee059ef5669578", "200 instances × 3 modes, 800 docs"),
        # InfoSearch's task files pin Length-v1 to Language-v1's commit (a copy-paste slip): Length-v1 is read from main
        ("length", "Length-v1", None, "300 instances × 3 modes, 1,200 docs"),
        ("source", "Source-v1", "67dad8949d168785706d82f93e6794e88c8fcd2e", "300 instances × 3 modes, 1,200 docs")):
    DATASETS[f"infosearch/{_dim}"] = Entry("infosearch", f"jianqunZ/{_repo}", _rev, "nDCG@10", _n, "not declared",
                                           allow=_INFOSEARCH_FILES)

for _s, _q, _docs, _levels in (("fiqa", 1718, "57,638", 3), ("scifact_open", 152, "500,000", 3),
                               ("nfcorpus", 86, "3,633", 1), ("aila", 85, "2,914", 3), ("fire", 168, "1,745", 1),
                               ("pm", 172, "241,006", 3), ("cds", 43, "633,955", 1)):
    DATASETS[f"ifir/{_s}"] = Entry(
        "ifir", "songtingyu/IFIR", None, "nDCG@20",
        f"{_q:,} instruction queries ({'levels 1–3' if _levels == 3 else 'level 1'}) + level 0, {_docs} docs", "MIT",
        subdir=_s, allow=(f"{_s}/*",))


#: The 13 BEIR datasets of Promptriever Table 3: paper key (the ``beir/<key>`` id, ``paper_numbers`` dataset) → BEIR
#: name (the ``BeIR/<name>`` hub repository and ``<name>.zip``), with the published test queries and corpus size (BEIR
#: Table 1) and, for the 7 with a selection split (Promptriever §4.3, footnote 12), that split's size.
BEIR: Dict[str, Tuple[str, str, str, Optional[str]]] = {
    "arguana": ("arguana", "1,406", "8,674", None),
    "climate_fever": ("climate-fever", "1,535", "5,416,593", None),
    "dbpedia": ("dbpedia-entity", "400", "4,635,922", "67 dev queries"),
    "fever": ("fever", "6,666", "5,416,568", "6,666 dev queries"),
    "fiqa": ("fiqa", "648", "57,638", "500 dev queries"),
    "hotpotqa": ("hotpotqa", "7,405", "5,233,329", "5,447 dev queries"),
    "nfcorpus": ("nfcorpus", "323", "3,633", "324 dev queries"),
    "nq": ("nq", "3,452", "2,681,468", None),
    "quora": ("quora", "10,000", "522,931", "5,000 dev queries"),
    "scidocs": ("scidocs", "1,000", "25,657", None),
    "scifact": ("scifact", "300", "5,183", "809 train queries (no dev split)"),
    "touche2020": ("webis-touche2020", "49", "382,545", None),
    "trec_covid": ("trec-covid", "50", "171,332", None),
}
BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{name}.zip"
_BEIR_FILES = ("corpus.jsonl.gz", "queries.jsonl.gz", "README.md")
_BEIR_LICENCE = "CC-BY-SA-4.0 (BeIR hub cards; source terms apply)"
for _key, (_name, _test, _docs, _sel) in BEIR.items():
    DATASETS[f"beir/{_key}"] = Entry("beir", f"BeIR/{_name}", None, "nDCG@10", f"{_test} test queries, {_docs} docs",
                                     _BEIR_LICENCE, allow=_BEIR_FILES, split="test")
    if _sel:
        DATASETS[f"beir/{_key}/dev"] = Entry("beir", f"BeIR/{_name}", None, "nDCG@10", f"{_sel}, {_docs} docs",
                                             _BEIR_LICENCE, allow=_BEIR_FILES, split="dev")


from .catalog import entries as _bright_mair_nevir  # noqa: E402 - BRIGHT, MAIR, NevIR (its module imports Entry)
DATASETS.update(_bright_mair_nevir())
from .catalog26 import entries as _benchmarks_2026  # noqa: E402 - LIMIT, R2MED, FreshStack (issue 44)
DATASETS.update(_benchmarks_2026())


def qrels_repo(entry: Entry) -> Optional[str]:
    """BEIR keeps the qrels in a second repository, ``BeIR/<name>-qrels`` (``test.tsv``, ``dev.tsv``, ``train.tsv``)."""
    return f"{entry.repo_id}-qrels" if entry.family == "beir" and entry.repo_id else None


def irds_id(name: str) -> str:
    """The ir_datasets id of a plugin dataset: ``instruct/<name>``."""
    return f"instruct/{name}"
