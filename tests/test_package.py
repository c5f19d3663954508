"""Packaging contracts: a light import, registered measures, named errors for missing extras."""
import subprocess
import sys
from pathlib import Path

import pytest

import pyterrier_instruct as pti
from pyterrier_instruct._optional import is_available, require


def test_import_is_light_and_fast():
    code = ("import time, sys; t = time.perf_counter(); import pyterrier_instruct; d = time.perf_counter() - t; "
            "print(d, 'torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["False", "False"]
    assert float(out[0]) < 1.0


def test_measures_are_registered_on_import():
    code = "import ir_measures, pyterrier_instruct; print(ir_measures.parse_measure('pMRR'))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "pMRR"
    assert pti.measures.pMRR is pti.pMRR


def test_lazy_public_names():
    for name in ["FoldInstruction", "SetInstruction", "BM25", "PoolBM25", "SBertBiEncoder", "followir_experiment",
                 "load_dataset", "TerrierBM25", "PyseriniBM25", "ListwiseReranker", "HFBackend", "VLLMBackend", "OpenAIBackend",
                 "FunctionBackend", "LISTWISE"]:
        assert getattr(pti, name) is not None
    with pytest.raises(AttributeError):
        pti.NoSuchThing


def test_missing_extra_names_the_install_command():
    assert is_available("json") and not is_available("no_such_module_xyz")
    with pytest.raises(ImportError, match=r"pip install 'pyterrier-instruct\[vllm\]'"):
        require("no_such_module_xyz", "vllm")


def test_notebooks_and_pipelines_compile():
    import ast
    from pathlib import Path

    import nbformat
    root = Path(__file__).parents[1]
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                ast.parse(cell.source)
    for path in sorted((root / "pipelines").glob("*.py")):
        ast.parse(path.read_text())


def test_pyproject_lists_every_subpackage():
    """pyproject names its packages (pipelines/ is mapped in as pyterrier_instruct.pipelines), so a new subpackage must be
    added there or it would be missing from the wheel."""
    import tomllib
    root = Path(__file__).parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "pyterrier_instruct").rglob("__init__.py")}
    assert set(config["packages"]) == found | {"pyterrier_instruct.pipelines"}
    assert config["package-dir"] == {"pyterrier_instruct.pipelines": "pipelines"} and (root / "pipelines" / "__init__.py").is_file()
