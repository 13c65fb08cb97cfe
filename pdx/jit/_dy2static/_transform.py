"""The AST rewrite behind pdx.jit's control-flow conversion.

`transform(tree, ...)` takes the `ast.FunctionDef` of a user function and
rewrites it in three passes, each a plain Python-to-Python rewrite that keeps
the meaning of code whose conditions are Python values:

1. `break` / `continue` become flag variables; the statements after them are
   guarded by `if not flag:` and the loop gets an extra test on the flag.
2. A function with `return` inside an `if` or a loop gets one exit: each
   `return e` sets `_pdx_do_return` / `_pdx_retval` and the rest is guarded.
3. `if`/`while`/`for`, `a if c else b`, `and`/`or`/`not`, chained comparisons,
   `assert`, `print` and every call become calls into `_runtime`
   (`_pdx_rt.if_stmt(...)`, ...). Branch and loop bodies become local
   functions that take and return the variables they assign (those still used
   afterwards, found by a liveness pass), so the runtime can hand them to
   `lax.cond` / `lax.while_loop` / `lax.scan` when a condition is traced, or
   simply call them when it is a Python value.

Generated nodes keep the line numbers of the statements they replace, so a
traceback through converted code points at the user's own file and line.
"""

from __future__ import annotations

import ast
import itertools

__all__ = ["ConversionError", "transform", "RT"]

RT = "_pdx_rt"
_PREFIX = "_pdx_"
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})


class ConversionError(Exception):
    """A construct the converter cannot rewrite (the function runs unconverted
    unless `full_graph=True`)."""

    def __init__(self, message: str, node: ast.AST | None = None):
        super().__init__(message)
        self.lineno = getattr(node, "lineno", None)


# -- name analysis -------------------------------------------------------------------

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


# -- helpers to build nodes ----------------------------------------------------------

def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _rt(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name(RT), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, *args: ast.expr, **kwargs: ast.expr) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()])


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(name, store=True)], value=value)


def _tuple(names, store=False) -> ast.Tuple:
    return ast.Tuple(elts=[_name(n, store) for n in names], ctx=ast.Store() if store else ast.Load())


def _strs(names) -> ast.Tuple:
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _not(expr: ast.expr) -> ast.UnaryOp:
    return ast.UnaryOp(op=ast.Not(), operand=expr)


def _lambda(body: ast.expr, args=()) -> ast.Lambda:
    return ast.Lambda(args=_arguments(args), body=body)


def _arguments(names) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _located(nodes, src):
    for node in nodes:
        for n in ast.walk(node):
            if "lineno" in n._attributes and not hasattr(n, "lineno"):
                ast.copy_location(n, src)
            if "end_lineno" in n._attributes and getattr(n, "end_lineno", None) is None:
                n.end_lineno, n.end_col_offset = n.lineno, getattr(n, "col_offset", 0)
    return nodes


# -- pass 1 and 2: break / continue / return ------------------------------------------

def _own_jumps(stmts, kinds) -> bool:
    """True when `stmts` hold a break/continue of this loop (not a nested one)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
            stack.extend(n.orelse)
            continue
        if isinstance(n, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _has_return(stmts) -> bool:
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            return True
        if isinstance(n, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


class _Jumps:
    """Turn break/continue/return into flags and guarded blocks."""

    def __init__(self, counter):
        self.counter = counter

    def block(self, stmts, flag_of):
        """Rewrite a block; `flag_of(node)` gives (flag name, value expr) for a
        jump node this pass handles, or None."""
        out = []
        for i, s in enumerate(stmts):
            hit = flag_of(s)
            if hit is not None:
                out.extend(_located(hit, s))
                return out  # the rest of the block is unreachable
            s = self.stmt(s, flag_of)
            out.append(s)
            flags = self.flags_set_by(s, flag_of)
            rest = stmts[i + 1:]
            if flags and rest:
                guard = self.block(rest, flag_of)
                test = _not(_name(flags[0])) if len(flags) == 1 else ast.BoolOp(
                    op=ast.And(), values=[_not(_name(f)) for f in flags])
                out.extend(_located([ast.If(test=test, body=guard, orelse=[])], rest[0]))
                return out
        return out

    def stmt(self, s, flag_of):
        if isinstance(s, ast.If):
            s.body = self.block(s.body, flag_of) or [ast.Pass()]
            s.orelse = self.block(s.orelse, flag_of)
        elif isinstance(s, (ast.With, ast.Try)) or type(s).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, self.block(getattr(s, field), flag_of) or [ast.Pass()])
            for h in getattr(s, "handlers", []):
                h.body = self.block(h.body, flag_of) or [ast.Pass()]
        elif isinstance(s, (ast.For, ast.While)):
            # Only returns cross loop boundaries; break/continue belong to the loop.
            if flag_of is self._return_flag:
                returns = _has_return(s.body)
                s.body = self.block(s.body, flag_of) or [ast.Pass()]
                if returns:
                    s._pdx_extra = getattr(s, "_pdx_extra", []) + [_not(_name(_PREFIX + "do_return"))]
        return s

    def flags_set_by(self, s, flag_of):
        names = []
        for n in ast.walk(s) if not isinstance(s, _SCOPES) else ():
            if isinstance(n, ast.Assign) and getattr(n, "_pdx_jump", None) and n._pdx_jump in self.active:
                if n.targets[0].id not in names:
                    names.append(n.targets[0].id)
        return names

    # -- loops: break / continue
    def loops(self, stmts):
        """Apply break/continue rewriting to every loop in `stmts` (depth first)."""
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list) and not isinstance(s, _SCOPES):
                    setattr(s, field, self.loops(getattr(s, field)))
            for h in getattr(s, "handlers", []) or []:
                h.body = self.loops(h.body)
            if isinstance(s, (ast.For, ast.While)):
                out.extend(self.loop(s))
            else:
                out.append(s)
        return out

    def loop(self, s):
        has_break = _own_jumps(s.body, ast.Break)
        has_cont = _own_jumps(s.body, ast.Continue)
        if not (has_break or has_cont):
            return [s]
        n = next(self.counter)
        brk, cont = f"{_PREFIX}break_{n}", f"{_PREFIX}continue_{n}"

        def flag_of(node):
            if isinstance(node, ast.Break):
                a = _assign(brk, ast.Constant(True))
            elif isinstance(node, ast.Continue):
                a = _assign(cont, ast.Constant(True))
            else:
                return None
            a._pdx_jump = a.targets[0].id
            return [a]

        self.active = {brk, cont}
        body = self.block_loop(s.body, flag_of)
        pre, post = [], []
        if has_cont:
            body = [_assign(cont, ast.Constant(False))] + body
        if has_break:
            pre = [_assign(brk, ast.Constant(False))]
            s._pdx_extra = getattr(s, "_pdx_extra", []) + [_not(_name(brk))]
            if s.orelse:
                post = [ast.If(test=_not(_name(brk)), body=s.orelse, orelse=[])]
                s.orelse = []
        s.body = body
        return _located(pre, s) + [s] + _located(post, s)

    def block_loop(self, stmts, flag_of):
        # Nested loops keep their own break/continue: stmt() does not descend into them.
        saved, self._return_flag = getattr(self, "_return_flag", None), None
        try:
            return self.block(stmts, flag_of)
        finally:
            self._return_flag = saved

    # -- returns
    def returns(self, fn: ast.FunctionDef):
        nested = any(isinstance(s, (ast.If, ast.For, ast.While)) and _has_return(s.body + s.orelse)
                     for s in _walk_scope_stmts(fn.body))
        if not nested:
            return
        for s in _walk_scope_stmts(fn.body):
            if isinstance(s, (ast.With, ast.Try)) and _has_return(s.body):
                raise ConversionError("`return` inside a `with`/`try` block of a function that also "
                                      "returns from inside an `if` or a loop", s)
        do_ret, retval = _PREFIX + "do_return", _PREFIX + "retval"

        def flag_of(node):
            if not isinstance(node, ast.Return):
                return None
            a = _assign(do_ret, ast.Constant(True))
            a._pdx_jump = do_ret
            return [a, _assign(retval, node.value or ast.Constant(None))]

        self.active = {do_ret}
        self._return_flag = flag_of
        always = _always_returns(fn.body)
        body = self.block(fn.body, flag_of)
        first = fn.body[0]
        fn.body = _located([_assign(do_ret, ast.Constant(False)),
                            _assign(retval, _call(_rt("UndefinedReturn")))], first) + body + \
            _located([ast.Return(value=_call(_rt("ret"), _name(retval), ast.Constant(True) if always else _name(do_ret),
                                                 _name("_pdx_ret_loc")))],
                     fn.body[-1])

def _always_returns(stmts) -> bool:
    """Every path through `stmts` ends in a `return` (or a raise)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, ast.While) and isinstance(last.test, ast.Constant) and last.test.value is True:
        return not _own_jumps(last.body, ast.Break)
    return False


def _walk_scope_stmts(stmts):
    for s in stmts:
        yield from (n for n in _walk_scope(s) if isinstance(n, ast.stmt))


# -- pass 3: control flow to runtime calls -------------------------------------------

class _Converter:
    def __init__(self, fn: ast.FunctionDef, counter, locs: list, declared: set[str]):
        self.counter = counter
        self.locs = locs
        self.declared = declared  # global / nonlocal names: never local state
        self.undefined: set[str] = set()
        self.fn = fn

    def loc(self, node) -> ast.Constant:
        self.locs.append(node.lineno)
        return ast.Constant(len(self.locs) - 1)

    def decls(self):
        out = []
        g = [n for n in self.declared if not n.startswith("nonlocal:")]
        nl = [n.split(":", 1)[1] for n in self.declared if n.startswith("nonlocal:")]
        if g:
            out.append(ast.Global(names=sorted(g)))
        if nl:
            out.append(ast.Nonlocal(names=sorted(nl)))
        return out

    def local_names(self, names) -> list[str]:
        bare = {n.split(":", 1)[-1] for n in self.declared}
        return sorted(n for n in names if n not in bare and (n in self.locals or n.startswith(_PREFIX)))

    # statements
    def block(self, stmts, live_out: set[str]) -> list[ast.stmt]:
        out = []
        for i, s in enumerate(stmts):
            after = live_in(stmts[i + 1:], live_out)
            out.extend(self.stmt(s, after))
        return out

    def stmt(self, s, after):
        if isinstance(s, ast.If):
            return self.if_(s, after)
        if isinstance(s, ast.While):
            return self.while_(s, after)
        if isinstance(s, ast.For):
            return self.for_(s, after)
        if isinstance(s, ast.Assert):
            msg = _lambda(self.expr(s.msg)) if s.msg is not None else ast.Constant(None)
            return _located([ast.Expr(_call(_rt("assert_"), self.expr(s.test), msg, self.loc(s)))], s)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            s.decorator_list = [self.expr(d) for d in s.decorator_list]
            if isinstance(s, ast.FunctionDef) and not _is_generator(s):
                convert_function_body(s, self.counter, self.locs, self.declared)
            return [s]
        if isinstance(s, ast.ClassDef):
            return [s]
        if (isinstance(s, ast.Return) and isinstance(s.value, ast.Call) and s.value.args
                and isinstance(s.value.args[-1], ast.Name) and s.value.args[-1].id == "_pdx_ret_loc"):
            s.value.args[-1] = self.loc(s)
            return [s]
        if isinstance(s, (ast.With, ast.Try)) or type(s).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, self.block(getattr(s, field), after))
            for h in getattr(s, "handlers", []):
                h.body = self.block(h.body, after)
            if isinstance(s, ast.With):
                for item in s.items:
                    item.context_expr = self.expr(item.context_expr)
            return [s]
        return [self.expr_in_stmt(s)]

    def expr_in_stmt(self, s):
        for field, value in ast.iter_fields(s):
            if isinstance(value, ast.expr):
                setattr(s, field, self.expr(value))
            elif isinstance(value, list):
                setattr(s, field, [self.expr(v) if isinstance(v, ast.expr) else v for v in value])
        return s

    def branch_fn(self, name, body, params, outputs, node):
        ret = ast.Return(value=_tuple(outputs))
        fn = ast.FunctionDef(name=name, args=_arguments(params), body=self.decls() + (body or []) + [ret],
                             decorator_list=[], returns=None, type_comment=None, type_params=[])
        return _located([fn], node)[0]

    def if_(self, s, after):
        n = next(self.counter)
        params = self.local_names(assigned(s.body + s.orelse))
        outputs = [p for p in params if p in after]
        self.undefined.update(params)
        true_fn, false_fn = f"{_PREFIX}true_{n}", f"{_PREFIX}false_{n}"
        mutated = sorted(mutated_lists(s.body + s.orelse))
        body = self.block(s.body, after)
        orelse = self.block(s.orelse, after)
        call = _call(_rt("if_stmt"), self.expr(s.test), _name(true_fn), _name(false_fn), _tuple(params),
                     _strs(outputs), _strs(params), self.loc(s),
                     _strs(mutated))
        stmts = [self.branch_fn(true_fn, body, params, outputs, s),
                 self.branch_fn(false_fn, orelse, params, outputs, s)]
        stmts.append(ast.Assign(targets=[_tuple(outputs, store=True)], value=call) if outputs else ast.Expr(call))
        return _located(stmts, s)

    def loop_state(self, s, after, targets=frozenset()):
        body_out = _loop_body_out(s, after)
        top = live_in(s.body, body_out)
        if isinstance(s, ast.While):
            top |= loads([s.test])
        top |= loads(getattr(s, "_pdx_extra", []))
        top -= targets
        changed = assigned(s.body) | targets
        state = self.local_names(changed & (top | after))
        self.undefined.update(state)
        return state, body_out

    def while_(self, s, after):
        n = next(self.counter)
        state, body_out = self.loop_state(s, after)
        test = s.test
        extra = _located(getattr(s, "_pdx_extra", []), s)
        if extra:
            test = _located([ast.BoolOp(op=ast.And(), values=extra + [test])], s)[0]
        cond_fn, body_fn = f"{_PREFIX}cond_{n}", f"{_PREFIX}body_{n}"
        body = self.block(s.body, body_out)
        cond = ast.FunctionDef(name=cond_fn, args=_arguments(state), body=[ast.Return(value=self.expr(test))],
                               decorator_list=[], returns=None, type_comment=None, type_params=[])
        call = _call(_rt("while_stmt"), _name(cond_fn), _name(body_fn), _tuple(state), _strs(state),
                     _strs(sorted(set(state) & after)), self.loc(s))
        stmts = [cond, self.branch_fn(body_fn, body, state, state, s)]
        stmts.append(ast.Assign(targets=[_tuple(state, store=True)], value=call) if state else ast.Expr(call))
        stmts += self.block(s.orelse, after)
        return _located(stmts, s)

    def for_(self, s, after):
        n = next(self.counter)
        targets = assigned([ast.Assign(targets=[s.target], value=ast.Constant(0))])
        state, body_out = self.loop_state(s, after, frozenset(targets))
        # the target is state only when read after the loop
        state = self.local_names(set(state) | (targets & after))
        self.undefined.update(state)
        item = f"{_PREFIX}item_{n}"
        body_fn, extra_fn = f"{_PREFIX}body_{n}", f"{_PREFIX}extra_{n}"
        body = self.block(s.body, body_out)
        body = [ast.Assign(targets=[s.target], value=_name(item))] + body
        iter_ = s.iter
        if (isinstance(iter_, ast.Call) and isinstance(iter_.func, ast.Name) and iter_.func.id == "range"
                and not iter_.keywords):
            iter_ = _call(_rt("range_"), *[self.expr(a) for a in iter_.args])
        else:
            iter_ = self.expr(iter_)
        stmts = [self.branch_fn(body_fn, body, [item] + state, state, s)]
        extra = _located(getattr(s, "_pdx_extra", []), s)
        if extra:
            test = extra[0] if len(extra) == 1 else _located([ast.BoolOp(op=ast.And(), values=extra)], s)[0]
            stmts.append(ast.FunctionDef(name=extra_fn, args=_arguments(state),
                                         body=[ast.Return(value=self.expr(test))], decorator_list=[],
                                         returns=None, type_comment=None, type_params=[]))
        call = _call(_rt("for_stmt"), iter_, _name(extra_fn) if extra else ast.Constant(None),
                     _name(body_fn), _tuple(state), _strs(state), _strs(sorted(set(state) & after)),
                     self.loc(s))
        stmts.append(ast.Assign(targets=[_tuple(state, store=True)], value=call) if state else ast.Expr(call))
        stmts += self.block(s.orelse, after)
        return _located(stmts, s)

    # expressions
    def expr(self, e):
        if e is None:
            return None
        out = _ExprConverter(self).visit(e)
        return _located([out], e)[0] if hasattr(e, "lineno") else out


class _ExprConverter(ast.NodeTransformer):
    def __init__(self, conv: _Converter):
        self.conv = conv

    def visit_Lambda(self, node):
        return node  # lambdas run as written

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values for n in ast.walk(v)):
            return node
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        return _located([_call(_rt(fn), *[_lambda(v) for v in node.values])], node)[0]

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _located([_call(_rt("not_"), node.operand)], node)[0]
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) < 2:
            return node
        operands = [node.left] + node.comparators
        parts = [ast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]])
                 for i, op in enumerate(node.ops)]
        return _located([_call(_rt("and_"), *[_lambda(p) for p in parts])], node)[0]

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return _located([_call(_rt("ifexp"), node.test, _lambda(node.body), _lambda(node.orelse),
                               self.conv.loc(node))], node)[0]

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id == "print":
            node.func = _located([_rt("print_")], node)[0]
            return node
        if isinstance(f, ast.Name) and f.id in ("super", "locals", "vars", "globals", "eval", "exec"):
            return node
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == RT:
            return node
        node.func = _located([_call(_rt("call"), f)], node)[0]
        return node


def _is_generator(fn) -> bool:
    for n in _walk_scope(fn):
        if n is not fn and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return True
    return False


def convert_function_body(fn: ast.FunctionDef, counter, locs, declared=frozenset()):
    """Run the three passes on one FunctionDef (and, through pass 3, on the
    functions defined inside it)."""
    own = set()
    for n in _walk_scope_stmts(fn.body):
        if isinstance(n, ast.Global):
            own.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            own.update("nonlocal:" + x for x in n.names)
    jumps = _Jumps(counter)
    jumps._return_flag = None
    fn.body = jumps.loops(fn.body)
    jumps.returns(fn)
    conv = _Converter(fn, counter, locs, own)
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    # Only the function's own locals are state; a list from an enclosing scope
    # that is only appended to stays a closure variable.
    conv.locals = params | _bound_names(fn.body)
    body = conv.block(fn.body, set())
    inits = [_assign(name, _call(_rt("Undefined"), ast.Constant(name)))
             for name in sorted(conv.undefined - params) if not name.startswith(_PREFIX + "retval")
             and name not in {x.split(":", 1)[-1] for x in conv.declared}]
    # docstring stays first
    doc = []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc, body = [body[0]], body[1:]
    decl = [s for s in body if isinstance(s, (ast.Global, ast.Nonlocal))]
    body = [s for s in body if not isinstance(s, (ast.Global, ast.Nonlocal))]
    fn.body = doc + decl + _located(inits, fn.body[0] if fn.body else fn) + (body or [ast.Pass()])


def transform(fn: ast.FunctionDef, class_name: str | None = None) -> tuple[ast.FunctionDef, list[int]]:
    """Rewrite a function definition in place.

    Returns:
      (the FunctionDef, line numbers indexed by the location ids the generated
      runtime calls carry).
    """
    if _is_generator(fn):
        raise ConversionError("generator and async functions are not converted", fn)
    if class_name:
        _Mangler(class_name).visit(fn)
    fn.decorator_list = []
    locs: list[int] = []
    convert_function_body(fn, itertools.count(), locs)
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args:
            first = (fn.args.posonlyargs + fn.args.args)
            if first:
                n.args = [_name("__class__"), _name(first[0].arg)]
    ast.fix_missing_locations(fn)
    return fn, locs


class _Mangler(ast.NodeTransformer):
    """Private names (`self.__x`) as the compiler mangles them inside a class body."""

    def __init__(self, class_name: str):
        self.prefix = "_" + class_name.lstrip("_")

    def _m(self, name: str) -> str:
        if name.startswith("__") and not name.endswith("__") and self.prefix != "_":
            return self.prefix + name
        return name

    def visit_Name(self, node):
        node.id = self._m(node.id)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self._m(node.attr)
        return node

    def visit_arg(self, node):
        node.arg = self._m(node.arg)
        return node
