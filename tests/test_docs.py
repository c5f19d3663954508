"""Every python block in README.md and docs/*.md runs, as a reader would run the page: top to bottom, blocks of one
page sharing one namespace, in a scratch folder. A block that cannot run offline (real 7B weights, a paid API) starts
with ``# needs: <what>`` and is reported as skipped with that reason (``pytest -ra`` lists them)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
NEEDS = re.compile(r"\A# needs: (.+)")


def blocks():
    for page in PAGES:
        for n, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8")), 1):
            yield pytest.param(page, match.group(1), id=f"{page.relative_to(ROOT)}#{n}")


_NAMESPACES: dict = {}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("docs")


@pytest.fixture(scope="module", autouse=True)
def no_cluster_left():
    """docs/scaling.md starts a local Ray cluster; shut it down with this module so that the Ray tests start their own
    (with tests/ on the workers' path)."""
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


@pytest.mark.parametrize("page,code", list(blocks()))
def test_block_runs(page, code, scratch, monkeypatch):
    needs = NEEDS.match(code)
    if needs:
        pytest.skip(f"needs: {needs.group(1)}")
    monkeypatch.chdir(scratch)
    namespace = _NAMESPACES.setdefault(page, {"__name__": f"docs:{page.name}"})
    exec(compile(code, f"{page.name}", "exec"), namespace)


def test_links_resolve():
    """Relative links in README.md and docs/ point at files that exist."""
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken
