"""Every python block in README.md and docs/*.md runs as written, as a reader would run the page: top to bottom, blocks
of one page sharing one namespace, in a scratch folder. None is skipped: what a block needs and a CI machine lacks
(7B weights, vLLM and a GPU, an API server, the benchmark files) is provided by the stand-ins of tests/standins.py
(tiny random models where the hub ids resolve, the vLLM stand-in, a chat server on loopback) and the miniature snapshots
at ``$PYTERRIER_INSTRUCT_DATA`` (tests/conftest.py), built once per test session."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks():
    for page in PAGES:
        for n, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8")), 1):
            yield pytest.param(page, match.group(1), id=f"{page.relative_to(ROOT)}#{n}")


_NAMESPACES: dict = {}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("docs")


@pytest.fixture(scope="session")
def standin_models(tmp_path_factory):
    import standins
    root = tmp_path_factory.mktemp("docs-models")
    standins.install_models(root)
    return root


@pytest.fixture(scope="module", autouse=True)
def standins(standin_models):
    """``$PYTERRIER_INSTRUCT_MODELS`` with the tiny stand-ins, ``vllm`` the stand-in, ``$OPENAI_BASE_URL`` and
    ``$VLLM_BASE_URL`` a chat server on 127.0.0.1 (an API key set), for this module only."""
    import fake_vllm
    import standins
    server = standins.chat_server()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTERRIER_INSTRUCT_MODELS", str(standin_models))
        mp.setenv("OPENAI_BASE_URL", server.url)
        mp.setenv("VLLM_BASE_URL", server.url)
        mp.setenv("OPENAI_API_KEY", "sk-docs-stand-in")
        mp.setitem(sys.modules, "vllm", fake_vllm)
        try:
            yield server
        finally:
            server.close()


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
