"""Name analysis for the control-flow rewrite: which local names a block
binds, mutates or reads, and which are live after a statement (so branch and
loop functions take and return only the variables used afterwards)."""

from __future__ import annotations

import ast

__all__ = ["assigned", "live_in", "loads", "mutated_lists"]

_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(node: ast.AST):
    """Nodes of `node` that belong to the same scope (not inside nested
    functions, classes or comprehensions)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, _SCOPES):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    yield child  # its name is bound here; decorators/defaults evaluated here
                    stack.extend(child.decorator_list)
                    if not isinstance(child, ast.ClassDef):
                        stack.extend(d for d in child.args.defaults + child.args.kw_defaults if d)
                    else:
                        stack.extend(child.bases)
                elif isinstance(child, ast.Lambda):
                    stack.extend(d for d in child.args.defaults + child.args.kw_defaults if d)
                    yield from (c for c in ast.walk(child) if isinstance(c, ast.Name)
                                and isinstance(c.ctx, ast.Load))  # closure reads
                else:
                    yield from (c for c in ast.walk(child) if isinstance(c, ast.Name)
                                and isinstance(c.ctx, ast.Load))
            else:
                stack.append(child)


def assigned(nodes, exclude=frozenset(), mutations=True) -> set[str]:
    """Local names a statement list binds (or mutates in place through
    list methods such as `.append`, which loops must carry too)."""
    out: set[str] = set()
    for stmt in nodes:
        for n in _walk_scope(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                out.add(n.name)
            elif (mutations and isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr in _MUTATORS and isinstance(n.func.value, ast.Name)):
                out.add(n.func.value.id)
    return out - exclude


def _bound_names(nodes) -> set[str]:
    """Names a statement list binds (assignment, def, import, ...), not counting
    list mutation."""
    return assigned(nodes, mutations=False)


def mutated_lists(nodes) -> set[str]:
    """Names whose list methods (`.append`, ...) a statement list calls."""
    out = set()
    for stmt in nodes:
        for n in _walk_scope(stmt):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr in _MUTATORS and isinstance(n.func.value, ast.Name)):
                out.add(n.func.value.id)
    return out


def loads(nodes) -> set[str]:
    out = set()
    for node in nodes:
        if node is None:
            continue
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                out.add(n.target.id)
    return out


def live_in(stmts, live_out: set[str]) -> set[str]:
    """Names whose current value may be read by `stmts` or after them."""
    live = set(live_out)
    for s in reversed(stmts):
        live = _stmt_live_in(s, live)
    return live


def _loop_body_out(s, live_out):
    """Names live at the end of one iteration: after the loop, or in the next
    iteration (a fixpoint over the body)."""
    head = loads([s.test]) if isinstance(s, ast.While) else set()
    head |= loads(getattr(s, "_pdx_extra", []))
    out = live_out | head
    for _ in range(8):
        top = live_in(s.body, out)
        if isinstance(s, ast.For):
            top -= assigned([ast.Assign(targets=[s.target], value=ast.Constant(0))])
        new = live_out | head | top
        if new == out:
            break
        out = new
    return out


def _stmt_live_in(s, out: set[str]) -> set[str]:
    if isinstance(s, ast.If):
        return loads([s.test]) | live_in(s.body, out) | live_in(s.orelse, out)
    if isinstance(s, ast.While):
        body_out = _loop_body_out(s, out)
        return loads([s.test]) | live_in(s.body, body_out) | live_in(s.orelse, out) | out
    if isinstance(s, ast.For):
        body_out = _loop_body_out(s, out)
        targets = assigned([ast.Assign(targets=[s.target], value=ast.Constant(0))])
        return (loads([s.iter]) | loads(getattr(s, "_pdx_extra", []))
                | (live_in(s.body, body_out) - targets) | live_in(s.orelse, out) | out)
    if isinstance(s, (ast.With,)):
        return loads(s.items and [i.context_expr for i in s.items]) | live_in(s.body, out)
    if isinstance(s, (ast.Try, ast.AsyncWith, ast.AsyncFor, ast.Match)) or hasattr(ast, "TryStar") and isinstance(s, ast.TryStar):
        return loads([s]) | out
    if isinstance(s, ast.Return):
        return loads([s.value])
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (out - {s.name}) | loads([s])
    if isinstance(s, ast.AugAssign):
        return out | loads([s])
    return (out - assigned([s])) | loads([s])


def _walk_scope_stmts(stmts):
    for s in stmts:
        yield from (n for n in _walk_scope(s) if isinstance(n, ast.stmt))
