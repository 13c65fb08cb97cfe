"""The shape of the house: a floor that imports no package, packages without import cycles, and a roof.

Nodes are pdx's packages (`pdx.nn`, `pdx.parallel`, ...; a subpackage belongs
to its top package) and its top-level modules (`pdx._graph`, ...). Edges are
every `import` of pdx code in a module, function-level imports included
(parsed with `ast`, nothing is imported). The rules:

1. **Floor**: a top-level module that is not part of the roof imports no pdx
   package, only other floor modules (the graph and flax/JAX adapters, logical
   axes and the sharding rule, the trace context, dtypes, random keys, ...).
2. **No cycles between packages**: the package graph is a DAG.
3. **Roof**: Paddle's face over the packages (`pdx/__init__.py`, the Tensor
   methods on jax.Array, the Paddle module tree, the coverage report) and the
   command line (`pdx/cli.py` and each command's `*_cli.py` module that
   `pdx/cli.py`'s `_COMMANDS` names: a command composes packages, so `pdx ckpt
   convert --to hf` may build a model) may import anything; no package
   imports it.

`KNOWN` lists each break of a rule that is still in the tree, with why; the
test fails when one is mended too (strict, like xfail), so the list only
shrinks.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "pdx"

ROOF = frozenset({"pdx", "pdx._tensor", "pdx._typed_tensors", "pdx._framework", "pdx._coverage",
                  "pdx._paddle_tree", "pdx.cli"})

KNOWN_CYCLES: dict = {}
KNOWN_ROOF_USES: dict = {}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _exists(dotted: str) -> bool:
    rel = pathlib.Path(*dotted.split("."))
    return (ROOT.parent / rel).with_suffix(".py").is_file() or (ROOT.parent / rel / "__init__.py").is_file()


def _commands() -> frozenset:
    """The `*_cli` modules `pdx/cli.py` runs commands from (its `_COMMANDS` table)."""
    tree = ast.parse((ROOT / "cli.py").read_text())
    table = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", None) == "_COMMANDS" for t in n.targets))
    return frozenset(m for m in (v.elts[0].value for v in table.values) if m.endswith("_cli"))


COMMANDS = _commands()
ROOF = ROOF | COMMANDS


def _node(module: str) -> str:
    """pdx.nn for pdx.nn.functional._conv; pdx._graph for itself; pdx for pdx/__init__.py; a command's
    module for itself."""
    if module in COMMANDS:
        return module
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else module


def _imports(path: pathlib.Path, module: str):
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name.startswith("pdx.") and not _exists(name):
                name = name.rpartition(".")[0]
            if name.startswith("pdx."):
                yield name, node.lineno


def graph() -> dict[str, dict[str, str]]:
    """node -> {imported node: 'file:line' of the first such import}."""
    edges: dict[str, dict[str, str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        src = _node(module)
        for target, line in _imports(path, module):
            dst = _node(target)
            if dst != src:
                edges.setdefault(src, {}).setdefault(dst, f"{path.relative_to(ROOT.parent)}:{line}")
    return edges


def _cycles(edges) -> list[frozenset]:
    """The strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(frozenset(component))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def _is_floor(node: str) -> bool:
    return node.startswith("pdx._") and node not in ROOF


def test_the_package_graph_has_no_cycles_but_the_known_ones():
    edges = graph()
    found = set(_cycles(edges))
    new = [sorted(c) for c in found - set(KNOWN_CYCLES)]
    mended = [sorted(c) for c in set(KNOWN_CYCLES) - found]
    detail = {c: {f"{a} -> {b}": where for a in c for b, where in edges.get(a, {}).items() if b in c}
              for c in map(frozenset, new)}
    assert not new, f"import cycles between packages: {detail}"
    assert not mended, f"mended, remove from KNOWN_CYCLES: {mended}"


def test_the_floor_imports_no_package():
    edges = graph()
    bad = {f"{a} -> {b}": where for a, targets in edges.items() if _is_floor(a)
           for b, where in targets.items() if not _is_floor(b)}
    assert not bad, f"floor modules (pdx/_*.py outside the roof) import upward: {bad}"


def test_no_package_imports_the_roof():
    edges = graph()
    found = {(a, b): where for a, targets in edges.items() if a not in ROOF and not _is_floor(a)
             for b, where in targets.items() if b in ROOF}
    new = {k: v for k, v in found.items() if k not in KNOWN_ROOF_USES}
    mended = sorted(set(KNOWN_ROOF_USES) - set(found))
    assert not new, f"packages importing the roof (only pdx/__init__.py may): {new}"
    assert not mended, f"mended, remove from KNOWN_ROOF_USES: {mended}"


def test_the_detector_sees_function_level_imports_and_cycles(tmp_path):
    edges = {"pdx.a": {"pdx.b": "x"}, "pdx.b": {"pdx.c": "y"}, "pdx.c": {"pdx.a": "z"}, "pdx.d": {"pdx.a": "w"}}
    assert _cycles(edges) == [frozenset({"pdx.a", "pdx.b", "pdx.c"})]
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from pdx.parallel import constrain\n    import pdx.nn.functional as F\n")
    found = {name for name, _ in _imports(source, "pdx.x")}
    assert {"pdx.parallel", "pdx.nn.functional"} <= found
