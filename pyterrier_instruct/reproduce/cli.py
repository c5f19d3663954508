"""``pyterrier-instruct <command>``: the reproduction pipelines (``pyterrier_instruct.reproduce.<module>``) behind one
console entry point. ``pyterrier-instruct <command> --help`` explains each."""
from __future__ import annotations

import importlib
import sys
from typing import List, Optional

def _commands():
    """``{command: (pipeline module, one line for the overview)}`` from the ``COMMAND = (name, line)`` each pipeline
    module of this package declares, read from their source (``--help`` imports no pipeline); ``demo`` first."""
    import ast
    from pathlib import Path
    found = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["COMMAND"]:
                name, line = ast.literal_eval(node.value)
                found[name] = (path.stem, line)
    return dict(sorted(found.items(), key=lambda item: (item[0] != "demo", item[0])))


#: command → (pipeline module, one line for the overview), declared by each pipeline module (``COMMAND``)
COMMANDS = _commands()

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
    from .._progress import silenced
    try:
        with silenced("--quiet" in argv[1:]):  # every bar, also of the stages a pipeline builds (indexes, corpora)
            return module.main(argv[1:])
    except anticipated() as err:  # a user's input or set-up, already explained by the message: one line, no traceback
        print(f"pyterrier-instruct {argv[0]}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2


def anticipated() -> tuple:
    """The errors whose message names the problem and the fix (data, dataset ids, model weights, a backend that cannot
    be reached): the CLI prints them as one line and exits with 2, as argparse does for a bad option."""
    from .._hub import ModelNotFoundError
    from ..backends.base import BackendUnavailable
    from ..datasets._files import DataError
    from ..datasets.readers import UnknownDatasetError
    return (DataError, UnknownDatasetError, ModelNotFoundError, BackendUnavailable)


if __name__ == "__main__":
    sys.exit(main())
