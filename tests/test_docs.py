"""Every python block in README.md and docs/*.md runs as written, as a reader would run the page: top to bottom, blocks
of one page sharing one namespace, in a scratch folder. None is skipped: what a block needs and a CI machine lacks
(7B weights, vLLM and a GPU, an API server, the benchmark files) is provided by the public stand-ins of
:mod:`pyterrier_instruct.testing` (tiny random models where the hub ids resolve, a chat server on loopback), the vLLM
stand-in (tests/fake_vllm.py) and the miniature snapshots at ``$PYTERRIER_INSTRUCT_DATA`` (tests/conftest.py), built
once per test session."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def page_blocks(page: Path) -> list:
    return [match.group(1) for match in BLOCK.finditer(page.read_text(encoding="utf-8"))]


def blocks():
    for page in PAGES:
        for n, _ in enumerate(page_blocks(page), 1):
            yield pytest.param(page, n, id=f"{page.relative_to(ROOT)}#{n}")


_NAMESPACES: dict = {}  # page -> the namespace its blocks share
_RAN: dict = {}  # page -> {block number: None, or the exception it raised}
_ENV: dict = {}  # page -> the environment its blocks left (a reader's session keeps it; the other pages do not see it)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("docs")


@pytest.fixture(scope="module", autouse=True)
def standins(standin_models):
    """``$PYTERRIER_INSTRUCT_MODELS`` with the tiny stand-ins, ``vllm`` the stand-in, ``$OPENAI_BASE_URL`` and
    ``$VLLM_BASE_URL`` a chat server on 127.0.0.1 (an API key set), for this module only."""
    import fake_vllm
    from pyterrier_instruct import testing
    server = testing.chat_server()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTERRIER_INSTRUCT_MODELS", str(standin_models))
        mp.setenv("PYTERRIER_INSTRUCT_DATA", os.environ["PYTERRIER_INSTRUCT_DATA"])  # restored after testing.install()
        mp.setenv("OPENAI_BASE_URL", server.url)
        mp.setenv("VLLM_BASE_URL", server.url)
        mp.setenv("OPENAI_API_KEY", "sk-docs-stand-in")
        mp.setitem(sys.modules, "vllm", fake_vllm)
        try:
            yield server
        finally:
            server.close()


@pytest.mark.parametrize("page,n", list(blocks()))
def test_block_runs(page, n, scratch, monkeypatch, request):
    """Block ``n`` of ``page``, the page's earlier blocks run first, each once and in page order, wherever this test
    comes in the run (alone, reversed, shuffled): a reader runs a page top to bottom."""
    monkeypatch.chdir(scratch)
    namespace = _NAMESPACES.setdefault(page, {"__name__": f"docs:{page.name}"})
    ran = _RAN.setdefault(page, {})
    before = dict(os.environ)
    _set_environ(_ENV.get(page, before))
    try:
        _run_blocks(page, n, namespace, ran, request)
    finally:
        _ENV[page] = dict(os.environ)
        _set_environ(before)


def _set_environ(values: dict) -> None:
    os.environ.clear()
    os.environ.update(values)


def _run_blocks(page, n, namespace, ran, request):
    for k, code in enumerate(page_blocks(page)[:n], 1):
        if k not in ran:
            if "local_cluster(" in code:  # docs/scaling.md starts one unless Ray runs: the session's (conftest.py)
                request.getfixturevalue("ray_cluster")
            try:
                exec(compile(code, f"{page.name}#{k}", "exec"), namespace)
            except BaseException as err:
                ran[k] = err
                raise
            ran[k] = None
        if ran[k] is not None:
            if k == n:
                raise ran[k]
            raise RuntimeError(f"{page.relative_to(ROOT)}#{k}, which block #{n} follows, failed: "
                               f"{type(ran[k]).__name__}: {ran[k]}") from ran[k]


def test_links_resolve():
    """Relative links in README.md and docs/ point at files that exist."""
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken
