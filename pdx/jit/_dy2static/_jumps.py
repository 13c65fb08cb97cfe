"""Passes 1 and 2 of the rewrite: `break` / `continue` become loop flags and
`return` inside an `if` or a loop becomes a single exit, each with the rest of
the block guarded by `if not flag:`."""

from __future__ import annotations

import ast

from pdx.jit._dy2static._names import _SCOPES, _walk_scope_stmts
from pdx.jit._dy2static._nodes import (_PREFIX, ConversionError, _assign, _call, _located, _name, _not,
                                       _rt)


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
