"""The registry entries of BRIGHT, MAIR and NevIR (plain data; :mod:`.registry` adds them to ``DATASETS``).

``bright/<task>[-long]`` at the revision mteb's ``BrightRetrieval`` pins (sizes: mteb's descriptive statistics);
``mair/dd-15`` … ``mair/fr-22`` and ``mair/<Task>`` (github sunnweiwei/MAIR @ 3b45273; the hub repositories' main
branch, no commit published); ``nevir[/validation|/train]`` and ``nevir/mteb`` at the revision mteb's ``NevIR`` pins.
"""
from __future__ import annotations

from typing import Dict

from ._bench import layout
from .entry import Entry

BRIGHT_REPO, BRIGHT_REVISION = "xlangai/BRIGHT", "a75a0eb483f6a5233a6efc2d63d71540a4443dfb"
#: task: (queries, documents, long documents or None, gold_ids judgements) — mteb descriptive statistics of BRIGHT
BRIGHT_TASKS = {
    "biology": (103, "57,359", "524", 374), "earth_science": (116, "121,249", "601", 609),
    "economics": (103, "50,220", "516", 823), "psychology": (101, "52,835", "512", 742),
    "robotics": (101, "61,961", "508", 553), "stackoverflow": (117, "107,081", "1,858", 819),
    "sustainable_living": (108, "60,792", "554", 604), "pony": (112, "7,894", "577", 2519),
    "leetcode": (142, "413,932", None, 262), "aops": (111, "188,002", None, 524),
    "theoremqa_theorems": (65, "23,839", None, 126), "theoremqa_questions": (205, "188,002", None, 469),
}
MAIR_QUERIES, MAIR_DOCS = "MAIR-Bench/MAIR-Queries", "MAIR-Bench/MAIR-Docs"
#: InF-IR Table 2's MAIR columns → MAIR task names (InF_Embed ``mair_update_args.py``)
MAIR_INF_IR = {"dd-15": "DD_2015", "dd-16": "DD_2016", "dd-17": "DD_2017", "fr-21": "FairRanking_2021",
               "fr-22": "FairRanking_2022"}
#: every MAIR task (``config.py`` ``TASK_CONFIG``, github sunnweiwei/MAIR @ 3b45273cfd8cec2a984707ec12101dcbc5454b94)
MAIR_TASKS = (
    "Competition-Math ProofWiki_Proof ProofWiki_Reference Stacks_Proof Stacks_Reference Stein_Proof Stein_Reference "
    "Trench_Proof Trench_Reference TAD TAS2 StackMathQA APPS CodeEditSearch CodeSearchNet Conala HumanEval-X LeetCode "
    "MBPP RepoBench TLDR SWE-Bench-Lite Apple ConvFinQA FinQA FinanceBench HC3Finance TAT-DQA Trade-the-event AY2 ELI5 "
    "Fever TREx WnCw WnWi WoW zsRE AILA2019-Case AILA2019-Statutes BSARD BillSum CUAD GerDaLIR LeCaRDv2 LegalQuAD "
    "REGIR-EU2UK REGIR-UK2EU ArguAna CQADupStack FiQA NFCorpus Quora SciDocs SciFact TopiOCQA Touche Trec-Covid "
    "ACORDAR CPCD ChroniclingAmericaQA Monant NTCIR PointRec ProCIS-Dialog ProCIS-Turn QuanTemp WebTableSearch CARE "
    "MISeD SParC SParC-SQL Spider Spider-SQL LitSearch CAsT_2019 CAsT_2020 CAsT_2021 CAsT_2022 Core_2017 "
    "Microblog_2011 Microblog_2012 Microblog_2013 Microblog_2014 PrecisionMedicine_2017 PrecisionMedicine_2018 "
    "PrecisionMedicine_2019 PrecisionMedicine-Article_2019 PrecisionMedicine-Article_2020 CliniDS_2014 CliniDS_2015 "
    "CliniDS_2016 ClinicalTrials_2021 ClinicalTrials_2022 ClinicalTrials_2023 DD_2015 DD_2016 DD_2017 FairRanking_2020 "
    "FairRanking_2021 FairRanking_2022 Genomics-AdHoc_2004 Genomics-AdHoc_2005 Genomics-AdHoc_2006 Genomics-AdHoc_2007 "
    "TREC-Legal_2011 NeuCLIR-Tech_2023 NeuCLIR_2022 NeuCLIR_2023 ProductSearch_2023 ToT_2023 ToT_2024 FoodAPI "
    "HuggingfaceAPI PytorchAPI SpotifyAPI TMDB TensorAPI ToolBench WeatherAPI ExcluIR Core17 News21 Robust04 "
    "InstructIR NevIR IFEval").split()
MAIR_LICENCE = "per source task (MAIR-Bench cards)"
NEVIR = ("orionweller/NevIR", "6263585072ce3b435ed09658613553fbf4e74184")
NEVIR_MTEB = ("orionweller/NevIR-mteb", "eab99575c01c6a8e39f8d2adc6e3c3adcfe84413")
NEVIR_PAIRS = {"test": 1383, "validation": 225, "train": 948}


def entries() -> Dict[str, Entry]:
    out: Dict[str, Entry] = {}
    for task, (queries, docs, long_docs, gold) in BRIGHT_TASKS.items():
        examples = f"examples/{task}-*"
        out[f"bright/{task}"] = Entry(
            "bright", BRIGHT_REPO, BRIGHT_REVISION, "nDCG@10", f"{queries} queries, {docs} docs, {gold:,} gold_ids",
            "CC-BY-4.0", allow=(examples, f"documents/{task}-*", "README.md"), split="standard", task=task)
        if long_docs is not None:
            out[f"bright/{task}-long"] = Entry(
                "bright", BRIGHT_REPO, BRIGHT_REVISION, "R@1", f"{queries} queries, {long_docs} long docs",
                "CC-BY-4.0", allow=(examples, f"long_documents/{task}-*", "README.md"), split="long", task=task)
    tasks = {**MAIR_INF_IR, **{t: t for t in MAIR_TASKS}}
    for key, task in tasks.items():
        out[f"mair/{key}"] = Entry("mair", MAIR_QUERIES, None, "nDCG@10",
                                   f"MAIR task {task} (queries + its docs.jsonl)",
                                   MAIR_LICENCE, subdir=task, allow=(f"{task}/*",), task=task)
    for split, pairs in NEVIR_PAIRS.items():
        suffix = "" if split == "test" else f"/{split}"
        out[f"nevir{suffix}"] = Entry("nevir", NEVIR[0], NEVIR[1], "PairedAccuracy",
                                      f"{pairs:,} pairs ({2 * pairs:,} queries, 2 candidates each)", "MIT",
                                      allow=(f"{split}.jsonl", "README.md"), split=split)
        out[f"nevir/mteb{suffix}"] = Entry("nevir-mteb", NEVIR_MTEB[0], NEVIR_MTEB[1], "PairedAccuracy",
                                           f"{pairs:,} pairs ({2 * pairs:,} queries, 2 candidates each)", "MIT",
                                           allow=("corpus.jsonl", "queries.jsonl", f"qrels/{split}.jsonl",
                                                  f"top_ranked/{split}.jsonl", "README.md"), split=split)
    return out


#: the second hub repository a dataset's folder holds: (repository, allow patterns, its subfolder: "" = the same folder)
def companion(entry: Entry):
    if entry.family == "mair":
        return MAIR_DOCS, (f"{entry.task}/*",), ""
    if entry.family == "freshstack":  # freshstack/corpus-oct-2024 has the same <topic>/ folders: kept apart
        from .catalog26 import FRESHSTACK_CORPUS
        return FRESHSTACK_CORPUS, (f"{entry.task}/*",), FRESHSTACK_CORPUS.split("/")[1]
    return None


def read(entry: Entry, folder):
    """Reads ``folder`` with the BRIGHT, MAIR or NevIR reader of ``entry``."""
    if entry.family == "bright":
        from . import bright
        return bright.read(folder, entry.task, long=entry.split == "long")
    if entry.family == "mair":
        from . import mair
        return mair.read(folder, entry.task)
    from . import nevir
    return nevir.read(folder, entry.split) if entry.family == "nevir" else nevir.read_mteb(folder, entry.split)


@layout("bright", "mair", "nevir", "nevir-mteb")
def _read_entry(entry: Entry, folder, qrels_mapping: str = "as-named"):
    return read(entry, folder)
