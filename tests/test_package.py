"""Packaging contracts: a light import, registered measures, named errors for missing extras."""
import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._optional import is_available, require


#: ``import pyterrier_instruct`` may add this many seconds to ``import pyterrier``, or, on a machine slow enough that
#: ``import pyterrier`` itself takes longer, this multiple of it (both imports slow down alike under load)
ADDED_SECONDS = 0.5
ADDED_RATIO = 1.0


def test_import_is_light():
    """Nothing heavy is imported, and the import adds little to PyTerrier's: both timed in one process, so the bound is
    relative to the machine's speed at that moment."""
    heavy = ["torch", "transformers", "sentence_transformers", "vllm", "matplotlib", "pyterrier_instruct.pointwise",
             "pyterrier_instruct.dense", "pyterrier_instruct.listwise", "pyterrier_instruct.backends",
             "pyterrier_instruct.evaluation", "pyterrier_instruct.reproduce"]
    code = ("import json, sys, time\n"
            "t0 = time.perf_counter()\nimport pyterrier\nt1 = time.perf_counter()\n"
            "import pyterrier_instruct\nt2 = time.perf_counter()\n"
            f"print(json.dumps([t1 - t0, t2 - t1, [m for m in {heavy!r} if m in sys.modules]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    pyterrier_seconds, added, loaded = json.loads(out.strip().splitlines()[-1])
    assert loaded == []
    limit = max(ADDED_SECONDS, ADDED_RATIO * pyterrier_seconds)
    assert added < limit, \
        f"import pyterrier_instruct took {added:.2f} s after import pyterrier ({pyterrier_seconds:.2f} s)"


def test_measures_are_registered_on_import():
    code = "import ir_measures, pyterrier_instruct; print(ir_measures.parse_measure('pMRR'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "pMRR"
    assert pti.measures.pMRR is pti.pMRR


def test_lazy_public_names():
    for name in ["FoldInstruction", "SetInstruction", "BM25", "PoolBM25", "SBertBiEncoder", "followir_experiment",
                 "load_dataset", "TerrierBM25", "PyseriniBM25", "ListwiseReranker", "HFBackend", "VLLMBackend",
                 "OpenAIBackend", "FunctionBackend", "LISTWISE"]:
        assert getattr(pti, name) is not None
    with pytest.raises(AttributeError):
        pti.NoSuchThing


def _declared(path: Path):
    """The names of the ``__all__`` assigned in a module's source (none without one)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and "__all__" in [t.id for t in getattr(
                node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]:
            return set(ast.literal_eval(node.value))
    return set()


def test_lazy_map_is_every_public_modules_all():
    """``pti.LAZY`` (module -> names) is each public module's ``__all__`` (a name re-exported by two modules is mapped
    to one, the same object), every public submodule's names are in its package's, and the ``TYPE_CHECKING`` imports
    that editors read import every module of the map, so nothing drifts."""
    root = Path(pti.__file__).parent
    for module, names in pti.LAZY.items():
        mod = importlib.import_module(f"pyterrier_instruct.{module}")
        assert set(names) <= set(mod.__all__), module
        assert [n for n in mod.__all__ if getattr(pti, n, None) is not getattr(mod, n)] == [], module
        for sub in sorted((root / module).glob("[!_]*.py")):
            assert _declared(sub) <= set(names), f"{module}/{sub.name}: names missing from {module}/__init__.py"
    flat = [n for names in pti.LAZY.values() for n in names]
    assert len(flat) == len(set(flat))
    block = next(n for n in ast.parse((root / "__init__.py").read_text()).body
                 if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    typed = {(i.module, a.name) for i in block.body for a in i.names}
    assert typed == {(m, "*") for m in pti.LAZY} | {(None, m) for m in pti.SUBPACKAGES}
    assert dir(pti) == pti.__all__ == sorted(set(pti.__all__)) and set(flat) | set(pti.SUBPACKAGES) <= set(pti.__all__)


def test_missing_extra_names_the_install_command():
    assert is_available("json") and not is_available("no_such_module_xyz")
    with pytest.raises(ImportError, match=r"pip install 'pyterrier-instruct\[vllm\]'"):
        require("no_such_module_xyz", "vllm")


def test_notebooks_and_pipelines_compile():
    import ast
    import importlib
    from pathlib import Path

    import nbformat
    root = Path(__file__).parents[1]
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                ast.parse(cell.source)
    from pyterrier_instruct.reproduce.cli import COMMANDS
    for module, _ in COMMANDS.values():  # every pipeline imports (no model library until a row is built)
        assert callable(importlib.import_module(f"pyterrier_instruct.reproduce.{module}").main)


def test_pyproject_lists_every_subpackage():
    """pyproject names its packages, so a new subpackage must be added there or it would be missing from the wheel; no
    folder outside the package is mapped in (pipelines/ holds scripts to run and copy, not a package of the wheel)."""
    import tomllib
    root = Path(__file__).parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "pyterrier_instruct").rglob("__init__.py")}
    assert set(config["packages"]) == found and "pyterrier_instruct.reproduce" in found
    assert "package-dir" not in config and not (root / "pipelines" / "__init__.py").exists()
    assert not any(p.startswith("pipelines") for p in config["packages"])
