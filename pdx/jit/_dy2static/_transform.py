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

Passes 1 and 2 are in `_jumps`, the liveness analysis in `_names`, the node
builders in `_nodes`; pass 3 is here.

Generated nodes keep the line numbers of the statements they replace, so a
traceback through converted code points at the user's own file and line.
"""

from __future__ import annotations

import ast
import itertools

from pdx.jit._dy2static._jumps import _Jumps
from pdx.jit._dy2static._names import (_bound_names, _loop_body_out, _walk_scope, _walk_scope_stmts,
                                       assigned, live_in, loads, mutated_lists)
from pdx.jit._dy2static._nodes import (_PREFIX, RT, ConversionError, _arguments, _assign, _call, _lambda,
                                       _located, _name, _rt, _strs, _tuple)

__all__ = ["ConversionError", "transform", "RT"]


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
