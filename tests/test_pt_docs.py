"""The API reference PyTerrier's documentation site includes (``pyterrier_instruct/pt_docs/``, as pyterrier-caching's):
it builds with Sphinx with warnings as errors, so every docstring it pulls in renders; it documents every public class,
function and measure and every command of the CLI; and it ships in the wheel.

PyTerrier's site builds these pages with its own Sphinx extensions, among them ``cite.dblp``, which queries DBLP; the
configuration shipped beside the pages (``pt_docs/conf.py``, so ``sphinx-build pyterrier_instruct/pt_docs html``
works as typed) registers ``cite.dblp`` as a directive that only links the DBLP record. Every class renders with its
constructor's parameters (issue 45: ``SavedRun(*args, **kwargs)`` before)."""
import fnmatch
import html
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pyterrier_instruct as pti
from pyterrier_instruct.reproduce.cli import COMMANDS

pytest.importorskip("sphinx")  # in the [docs] extra, which [test] includes

ROOT = Path(__file__).parents[1]
PT_DOCS = ROOT / "pyterrier_instruct" / "pt_docs"


def _pages() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(PT_DOCS.rglob("*.rst")))


def _class_signatures(site: Path) -> dict:
    """``{class: its signature as rendered}`` over every page of a built site."""
    found = {}
    for page in site.rglob("*.html"):
        entries = re.findall(r'<dt class="sig sig-object py" id="([^"]+)">(.*?)</dt>', page.read_text("utf-8"), re.S)
        for name, sig in entries:
            text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", sig)).split()).rstrip("¶")
            if text.startswith("class "):
                found[name] = text[len("class "):]
    return found


def test_pt_docs_build_without_a_warning(tmp_path):
    # as a user types it: no -c, the configuration is the one beside the pages
    done = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(tmp_path / "doctrees"), str(PT_DOCS), str(tmp_path / "html")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0 and "WARNING" not in done.stderr and "ERROR" not in done.stderr, done.stderr[-4000:]
    page = (tmp_path / "html" / "families" / "qwen3-reranker.html").read_text(encoding="utf-8")
    assert 'id="pyterrier_instruct.Qwen3Reranker.four_b"' in page and "gritlm" not in page  # its own presets only
    measures = (tmp_path / "html" / "measures.html").read_text(encoding="utf-8")
    assert "pairwise reciprocal-rank change" in measures  # pMRR's docstring, through autodata
    assert 'href="https://dblp.org/rec/journals/corr/abs-2403-15246"' in measures
    signatures = _class_signatures(tmp_path / "html")
    assert len(signatures) > 40 and [c for c, s in signatures.items() if s.endswith("(*args, **kwargs)")] == []
    assert re.fullmatch(r"pyterrier_instruct\.SavedRun\(system: (pt\.)?Transformer, directory: str, \*, key: "
                        r"(Optional\[str\]|str \| None) = None, verbose: bool = True\)",
                        signatures["pyterrier_instruct.SavedRun"])
    assert signatures["pyterrier_instruct.FIRST"].startswith("pyterrier_instruct.FIRST(model_name_or_path: str = "
                                                             "'castorini/first_mistral', *, backend")


def test_every_public_name_has_its_entry():
    """Each class, function and measure of ``pti.__all__`` is the subject of an ``auto*`` directive; constants (prompt
    tables, strings) and subpackages are documented where they are used."""
    pages = _pages()
    documented = set(re.findall(r"^\.\. auto(?:class|function|data|method):: (\S+)", pages, re.M))
    missing = []
    for name in pti.__all__:
        obj = getattr(pti, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)
                or type(obj).__module__ == "pyterrier_instruct.measures"):
            continue
        qualified = f"{getattr(obj, '__module__', '')}.{name}"
        if f"pyterrier_instruct.{name}" not in documented and qualified not in documented:
            missing.append(name)
    assert missing == []


def test_every_command_has_its_entry():
    pages = (PT_DOCS / "cli.rst").read_text(encoding="utf-8")
    assert [c for c in COMMANDS if not re.search(rf"^``{re.escape(c)}``$", pages, re.M)] == []


def test_every_family_page_is_in_the_index_and_the_wheel():
    import tomllib
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = setuptools["package-data"]["pyterrier_instruct"]
    files = [p.relative_to(ROOT / "pyterrier_instruct").as_posix() for p in PT_DOCS.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]  # compileall's bytecode of conf.py is never shipped
    assert [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)] == []
    index = (PT_DOCS / "index.rst").read_text(encoding="utf-8")
    assert "   families/*" in index  # a new family's page is one file in families/, found by the toctree's glob
    assert {p.stem for p in (PT_DOCS / "families").glob("*.rst")} >= {"monot5", "causal-lm", "qwen3-reranker", "rank1",
                                                                     "listwise", "dense"}


def test_readme_installs_into_another_environment_from_any_clone(tmp_path):
    """README's line for another environment is run in the clone and reads no remote: the line it replaced,
    ``git+$(git remote get-url origin)``, is no URL pip reads when the clone came from a local path (issue 45)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    line = install.split("into another environment", 1)[1].split("```bash\n", 1)[1].split("\n", 1)[0]
    assert line == 'pip install ".[hf]"' and "$(git remote get-url origin)" not in readme
    report = tmp_path / "report.json"  # what pip would install (resolved, nothing installed; offline)
    # a HOME of its own: pip's user agent runs `rustc --version`, whose rustup proxy writes ~/.rustup/settings.toml
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-build-isolation",
                           "--no-index", "-q", "--report", str(report), ".[hf]"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    [planned] = json.loads(report.read_text())["install"]
    assert planned["metadata"]["name"] == "pyterrier-instruct" and planned["requested_extras"] == ["hf"]
