"""``pyterrier-instruct <command>``: the reproduction pipelines (``pyterrier_instruct.reproduce.<module>``) behind one
console entry point. ``pyterrier-instruct <command> --help`` explains each."""
from __future__ import annotations

import importlib
import sys
from typing import List, Optional

#: command → (pipeline module, one line for the overview)
COMMANDS = {
    "demo": ("demo", "the main job: FollowIR-style baselines on the bundled instruct-mini (no GPU, no network)"),
    "followir": ("followir", "FollowIR Table 2: MAP@1000/nDCG@5 and p-MRR of the rerankers on Robust04, News21, Core17"),
    "infosearch": ("infosearch", "InfoSearch Tables 2-3: nDCG@10, p-MRR, WISE, SICR over the six dimensions"),
    "ifir": ("ifir", "IFIR Table 3: nDCG@20 per subset and level (INSTFOL@20 with --judge)"),
    "instructir": ("instructir", "InstructIR: nDCG@10 and Robustness@10 (FollowIR Table 4, Promptriever Table 1)"),
    "inf-ir": ("inf_ir", "InF-IR Table 2: bi-encoders on FollowIR, MAIR DD/FR and BRIGHT (nDCG@10), with InF-IR's query+instruction"),
    "beir-prompts": ("beir_prompts", "Promptriever Table 3: BEIR nDCG@10 with no prompt, the selected prompt, the best prompt"),
}

USAGE = """usage: pyterrier-instruct <command> [options]

Reproduces the instruction-following retrieval papers with PyTerrier pipelines. Each command prints the paper's table
with the published numbers and the difference below each row, writes it to --out, and saves every system's run there
(a re-run reuses finished runs).

commands:
{commands}

Start with `pyterrier-instruct demo` (a minute on a laptop), then `pyterrier-instruct <command> --help`.
Data: the commands download a dataset's pinned revision when online; give --path DIR for a local copy (see README).
"""


def usage() -> str:
    width = max(map(len, COMMANDS))
    return USAGE.format(commands="\n".join(f"  {name:<{width}}  {line}" for name, (_, line) in COMMANDS.items()))


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"pyterrier-instruct: unknown command {argv[0]!r}; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"pyterrier_instruct.reproduce.{COMMANDS[argv[0]][0]}")
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
