"""The package's import graph, read from every import statement (imports inside functions included): no cycles, and no
module imports its own package's or an ancestor package's ``__init__`` (which would run while that ``__init__`` is
still loading). The one exception is the application layer, ``reproduce``: the CLI pipelines are written against the
public API (``import pyterrier_instruct as pti``), as a user writes them; the package root never imports them."""
import ast
from pathlib import Path

import pyterrier_instruct

ROOT = Path(pyterrier_instruct.__file__).parent
PKG = ROOT.name
APPLICATION = (f"{PKG}.reproduce",)


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in ROOT.rglob("*.py")}


def _imports(module: str):
    """Every module of the package that ``module`` imports, anywhere in its body."""
    path = MODULES[module]
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                mod = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            # ``from pkg import sub`` imports the submodule; ``from pkg import name`` reads the package itself
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t.startswith(PKG) and t not in MODULES:
                t = t.rpartition(".")[0]
            if t in MODULES and t != module:
                yield t


GRAPH = {m: set(_imports(m)) for m in MODULES}


def _cycles():
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on.discard(group[-1])
            if len(group) > 1:
                groups.append(sorted(group))
    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return groups


def test_the_graph_is_read():
    assert len(MODULES) > 50 and f"{PKG}._fingerprint" in GRAPH[f"{PKG}._config"] | GRAPH[f"{PKG}.dense.biencoder"]


def test_no_import_cycles():
    assert _cycles() == []


def test_no_module_imports_a_package_above_it():
    def package(m):
        return m if MODULES[m].name == "__init__.py" else m.rpartition(".")[0]
    upward = sorted((a, b) for a, targets in GRAPH.items() for b in targets
                    if MODULES[b].name == "__init__.py" and (package(a) + ".").startswith(b + ".")
                    and not (b == PKG and a.startswith(APPLICATION)))
    assert upward == []


def test_fingerprint_imports_nothing_above_it():
    """``_fingerprint`` is below every class it describes: objects describe themselves (``_fingerprint_()``); it reads
    only where weights are (``_hub``) and the store that remembers file digests (``_store``), leaves that describe
    nothing."""
    below = {f"{PKG}._hub", f"{PKG}._store"}
    assert GRAPH[f"{PKG}._fingerprint"] == below
    reached, todo = set(), list(below)
    while todo:
        m = todo.pop()
        reached.add(m)
        todo += [t for t in GRAPH[m] if t not in reached]
    assert reached <= below | {f"{PKG}.errors", f"{PKG}._atomic"}
