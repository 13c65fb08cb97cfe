"""Chat templates rendered under a budget: time, output size, intermediate work and nesting.

A chat template comes from a downloaded `tokenizer_config.json` or from a
request, so it is treated as untrusted code. Jinja's immutable sandbox stops
it from reaching Python objects; this module also stops it from running
forever, allocating gigabytes or recursing through the interpreter:

- before anything is parsed: the template's UTF-8 size (`max_template_bytes`)
  and the size of everything passed to it (`max_input_bytes`, messages,
  tools and extra variables walked iteratively, with their nesting depth);
- a pre-scan of the template's tokens (Jinja's lexer, no recursion) for the
  nesting of blocks and brackets (`max_nesting`), so a 20,000-deep `{% if %}`
  is refused before Jinja's recursive parser sees it;
- from the scan through the render: a per-thread `sys.settrace` hook checks
  the deadline (`max_seconds`) on Python calls (Jinja's lexer, parser and
  compiler included) and on every line of the template's compiled code, so
  a loop of 10^5 x 10^5 iterations, or a huge template's compile, ends at
  the deadline; the sandbox's operator,
  call and filter hooks size every string or list before it is made
  (`'x' * 2**32`, `'x'|center(10**9)`, `'%9999999999s' % x` are refused
  without allocating), each value is capped at `max_output_chars` and their
  running total at `max_work_chars`; the rendered text is counted as it is
  produced.

Every failure is one `TemplateError` (a `TokenizerError`, hence a
`ValueError`) whose message names the limit and its value; `.limit` holds
the budget field's name (None for an error of the template itself: a
`raise_exception` call, an undefined field, a type error on a client's
message). The renderer holds no global state, so threads may render at once.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
import re
import sys
import threading
import time
from collections import OrderedDict

from pdx.text._errors import TokenizerError

__all__ = ["TemplateBudget", "TemplateError", "render_chat_template"]


class TemplateError(TokenizerError):
    """A chat template that cannot be rendered within its budget, or that fails on the given messages.

    `limit` is the `TemplateBudget` field that was exceeded (e.g. "max_seconds"),
    or None when the template itself failed (its `raise_exception`, an
    undefined attribute, a message field of the wrong type). Servers answer
    it with HTTP 400.
    """

    def __init__(self, message: str, limit: str | None = None):
        super().__init__(message)
        self.limit = limit


@dataclasses.dataclass(frozen=True)
class TemplateBudget:
    """The limits a chat template renders under (see the module docstring).

    Attributes:
      max_seconds: wall-clock time of one render.
      max_compile_seconds: wall-clock time to scan and compile a template not seen before (compiled templates
        are cached, 32 of them, so a tokenizer's own template pays it once; raise it on a heavily loaded host).
      max_template_bytes: UTF-8 size of the template source.
      max_input_bytes: UTF-8 size of the messages, tools and extra variables together.
      max_output_chars: length of the rendered text, and of any single value the template builds.
      max_work_chars: total length of all strings and lists the template builds while rendering.
      max_nesting: nesting of blocks plus brackets in the source, and of the input structures.

    Example:
      >>> TemplateBudget(max_seconds=0.5).max_seconds
      0.5
    """

    max_seconds: float = 2.0
    max_compile_seconds: float = 2.0
    max_template_bytes: int = 64 << 10
    max_input_bytes: int = 4 << 20
    max_output_chars: int = 4 << 20
    max_work_chars: int = 64 << 20
    max_nesting: int = 64

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            kind = (int, float) if field.name.endswith("_seconds") else int
            if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
                raise ValueError(f"TemplateBudget: {field.name} must be a positive number; got {value!r}")


DEFAULT_BUDGET = TemplateBudget()

# Block tags that open a level closed by `end<tag>`.
_BLOCK_TAGS = frozenset({"for", "if", "macro", "call", "filter", "with", "block", "autoescape", "trans", "set"})
_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")
# Operators that nest the parsed expression one level deeper each time they are chained in one tag.
_CHAINING = frozenset({"+", "-", "*", "/", "//", "%", "**", "~", "|", ".", "not", "and", "or", "is", "in"})
# Filters whose integer arguments size their result (a width, a count, a padding).
_SIZING_FILTERS = frozenset({"center", "indent", "wordwrap", "batch", "slice", "format", "truncate"})
# str methods whose integer arguments or format widths size their result.
_SIZING_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "format", "format_map"})
_DIGITS = re.compile(r"\d+")
_MAX_INT_BITS = 1 << 16
_CACHE_SIZE = 32
_CHECK_EVERY = 64


class _State:
    """One render's counters; lives in a context variable of the rendering thread."""

    def __init__(self, budget: TemplateBudget):
        self.budget = budget
        self.limit = "max_compile_seconds"  # until the render starts
        self.deadline = time.monotonic() + budget.max_compile_seconds
        self.steps = 0
        self.work = 0
        self.output = 0

    def trace(self, frame, event, arg):
        """Every Python call in this thread (Jinja's lexer, parser, compiler, filters): the deadline is checked."""
        self.steps += 1
        if self.steps % _CHECK_EVERY == 0 and time.monotonic() > self.deadline:
            raise TemplateError(f"chat template ran past {self.limit}={getattr(self.budget, self.limit)} "
                                f"({self.steps} steps)", self.limit)
        if frame.f_code.co_filename == "<template>":
            return self.step
        return None

    def step(self, frame, event, arg):
        self.steps += 1
        if event == "line" and self.steps % _CHECK_EVERY == 0 and time.monotonic() > self.deadline:
            raise TemplateError(f"chat template ran past {self.limit}={getattr(self.budget, self.limit)} "
                                f"({self.steps} steps)", self.limit)
        return self.step


_STATE: contextvars.ContextVar[_State | None] = contextvars.ContextVar("pdx_template_state", default=None)


def _budget() -> TemplateBudget:
    state = _STATE.get()
    return state.budget if state is not None else DEFAULT_BUDGET


def _size(value) -> int:
    """Length in characters (str) or items (list/tuple/dict) of a value the template built; 0 otherwise."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    return 0


def _admit(size: int, what: str) -> None:
    """Refuse a value of `size` before it is built; charge it to the render's running total."""
    budget = _budget()
    if size > budget.max_output_chars:
        raise TemplateError(f"chat template: {what} would build a value of {size} characters/items, over "
                            f"max_output_chars={budget.max_output_chars}", "max_output_chars")
    state = _STATE.get()
    if state is not None:
        state.work += size
        if state.work > budget.max_work_chars:
            raise TemplateError(f"chat template built more than max_work_chars={budget.max_work_chars} "
                                "characters of intermediate values", "max_work_chars")


def _check_ints(values, what: str) -> None:
    limit = _budget().max_output_chars
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > limit:
            raise TemplateError(f"chat template: {what} got the size argument {v}, over "
                                f"max_output_chars={limit}", "max_output_chars")


def _check_format(fmt, what: str) -> None:
    """Refuse a format string with a width or precision over the output cap ('%9999999999s', '{:>99999999}')."""
    if isinstance(fmt, str):
        _check_ints(_format_numbers(fmt), what)


def _format_numbers(fmt: str):
    for d in _DIGITS.findall(fmt):
        yield int(d) if len(d) < 19 else 1 << 64


def _int_bits(v) -> int:
    return v.bit_length() if isinstance(v, int) else 0


def _repeat_size(seq, n) -> int | None:
    if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
        return len(seq) * max(n, 0)
    return None


def _binop(op: str, left, right):
    """Intercepted `*`, `**`, `+`, `%`: the result's size is checked before it is computed."""
    import operator

    if op == "*":
        size = _repeat_size(left, right)
        size = _repeat_size(right, left) if size is None else size
        if size is not None:
            _admit(size, f"'{op}'")
        elif isinstance(left, int) and isinstance(right, int) and _int_bits(left) + _int_bits(right) > _MAX_INT_BITS:
            raise TemplateError(f"chat template: '*' of two integers of {_int_bits(left)} and {_int_bits(right)} "
                                f"bits, over {_MAX_INT_BITS} bits (the cap on integers that goes with max_output_chars)",
                                "max_output_chars")
        return operator.mul(left, right)
    if op == "**":
        if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0 and (
                _int_bits(left) * right > _MAX_INT_BITS):
            raise TemplateError(f"chat template: '**' of {left} to the power {right} would exceed {_MAX_INT_BITS} "
                                "bits (the cap on integers that goes with max_output_chars)", "max_output_chars")
        return operator.pow(left, right)
    if op == "+":
        if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            _admit(len(left) + len(right), "'+'")
        return operator.add(left, right)
    if op == "%":
        if isinstance(left, str):
            _check_format(left, "'%' formatting")
            _check_ints(right if isinstance(right, tuple) else (right,), "'%' formatting")
            result = left % right
            _admit(len(result), "'%' formatting")
            return result
        return operator.mod(left, right)
    raise AssertionError(op)


def _join_size(sep: str, items) -> tuple[list, int]:
    """Materialize `items` for a join, counting as it goes so a huge join is refused early."""
    limit = _budget().max_output_chars
    out, total = [], 0
    for item in items:
        total += len(sep) + (len(item) if isinstance(item, str) else 16)
        if total > limit:
            raise TemplateError(f"chat template: a join would build more than max_output_chars={limit} characters",
                                "max_output_chars")
        out.append(item)
    return out, total


def _replace_size(s: str, old: str, new: str, count: int = -1) -> int:
    hits = (len(s) + 1) if old == "" else s.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(s) + hits * (len(new) - len(old))


def _guard_filter(name: str, func):
    """Wrap one Jinja filter: size arguments checked before, result size charged after."""
    pass_arg = getattr(func, "jinja_pass_arg", None)
    skip = 1 if pass_arg is not None else 0

    @functools.wraps(func)
    def guarded(*args, **kwargs):
        value_args = args[skip:]
        if name in _SIZING_FILTERS:
            _check_ints(list(value_args[1:]) + list(kwargs.values()), f"the filter {name!r}")
            if name == "format" and value_args:
                _check_format(value_args[0], "the filter 'format'")
        elif name == "replace" and len(value_args) >= 3 and all(isinstance(a, str) for a in value_args[:3]):
            _admit(_replace_size(*value_args[:3], *value_args[3:4]), "the filter 'replace'")
        elif name == "join" and value_args:
            seq = value_args[0]
            sep = value_args[1] if len(value_args) > 1 else kwargs.get("d", "")
            if isinstance(sep, str) and not isinstance(seq, str):
                items, _ = _join_size(sep, seq)
                args = args[:skip] + (items,) + tuple(value_args[1:])
        elif name == "sum":
            start = kwargs.get("start", value_args[2] if len(value_args) > 2 else 0)
            if not isinstance(start, (int, float)):
                raise TemplateError("chat template: the filter 'sum' adds numbers only (start must be a number)")
        result = func(*args, **kwargs)
        _admit(_size(result), f"the filter {name!r}")
        return result

    return guarded


def _tojson(value, indent=None, separators=None, sort_keys=False):
    """Hugging Face's `tojson` (no HTML escaping, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise_exception(message):
    raise TemplateError(f"chat template: {message}")


def _strftime_now(fmt):
    import datetime

    if not isinstance(fmt, str) or len(fmt) > 256:
        raise TemplateError("chat template: strftime_now takes a short format string")
    return datetime.datetime.now().strftime(fmt)


@functools.lru_cache(maxsize=1)
def _environment():
    from jinja2.compiler import CodeGenerator
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BudgetBuffer(list):
        """The buffer of a `{% set %}` block, a macro or a filter block: appends are counted."""

        def append(self, item):
            _admit(_size(item), "template output")
            super().append(item)

        def extend(self, items):
            items = tuple(items)
            _admit(sum(_size(i) for i in items), "template output")
            super().extend(items)

    class BudgetCodeGenerator(CodeGenerator):
        def buffer(self, frame):
            frame.buffer = self.temporary_identifier()
            self.writeline(f"{frame.buffer} = environment.budget_buffer()")

        def visit_Concat(self, node, frame):
            self.write("environment.budget_concat((")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    class BudgetEnvironment(ImmutableSandboxedEnvironment):
        code_generator_class = BudgetCodeGenerator
        intercepted_binops = frozenset({"*", "**", "+", "%"})

        @staticmethod
        def budget_buffer():
            return BudgetBuffer()

        @staticmethod
        def budget_concat(parts):
            parts = [p if isinstance(p, str) else str(p) for p in parts]
            _admit(sum(len(p) for p in parts), "'~'")
            return "".join(parts)

        def call_binop(self, context, operator, left, right):
            return _binop(operator, left, right)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: PYI063 - jinja's own signature
            # the sandbox wraps str.format in a function that keeps the bound method as __wrapped__
            owner = getattr(__obj, "__self__", None)
            if owner is None:
                owner = getattr(getattr(__obj, "__wrapped__", None), "__self__", None)
            name = getattr(__obj, "__name__", "")
            if isinstance(owner, str):
                if name in _SIZING_METHODS:
                    _check_ints(list(args) + list(kwargs.values()), f"str.{name}")
                    if name.startswith("format"):
                        _check_format(owner, f"str.{name}")
                elif name == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
                    _admit(_replace_size(owner, *args[:2], *args[2:3]), "str.replace")
                elif name == "join" and args:
                    items, _ = _join_size(owner, args[0])
                    args = (items,) + args[1:]
            result = super().call(__context, __obj, *args, **kwargs)
            _admit(_size(result), f"the call of {name or type(__obj).__name__}")
            return result

    env = BudgetEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.filters = {name: _guard_filter(name, f) for name, f in env.filters.items()}
    env.globals.pop("lipsum", None)
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def _scan_nesting(env, source: str, budget: TemplateBudget) -> None:
    """Refuse a template nested deeper than max_nesting (blocks + brackets), from its tokens alone."""
    from jinja2.exceptions import TemplateSyntaxError

    depth = worst = chain = 0
    blocks: list[int] = []  # depth at each open block
    expect_tag = False
    pending_set = None
    max_chain = budget.max_nesting * 4
    prev = None  # the previous token: a name, string, ")" or "]" before "(" / "[" makes a call / subscript
    try:
        for lineno, kind, value in env.lex(source):
            if kind == "operator" and value in _OPEN:
                depth += 1
            elif kind == "operator" and value in _CLOSE:
                depth = max(depth - 1, 0)
            elif kind in ("block_begin", "variable_begin"):
                expect_tag = kind == "block_begin"
                chain = 0
                continue
            elif kind == "name" and expect_tag:
                if value in _BLOCK_TAGS and value != "set":
                    depth += 1
                    blocks.append(depth)
                elif value == "set":
                    pending_set = True
                elif value.startswith("end") and blocks:
                    depth = max(blocks.pop() - 1, 0)
            elif kind == "operator" and value == "=" and pending_set:
                pending_set = False
            elif kind == "block_end" and pending_set:  # `{% set x %}...{% endset %}`: a block
                depth += 1
                blocks.append(depth)
                pending_set = None
            elif kind == "block_end":
                pending_set = None
            postfix = kind == "operator" and value in "([" and prev in ("name", "string", ")", "]")
            if kind == "whitespace":
                continue
            prev = value if kind == "operator" else kind
            if postfix or ((kind == "operator" or kind == "name") and value in _CHAINING):
                chain += 1
                if chain > max_chain:
                    raise TemplateError(f"chat template chains more than {max_chain} operators in one tag "
                                        f"(line {lineno}); max_nesting={budget.max_nesting} allows "
                                        f"{max_chain}", "max_nesting")
            expect_tag = False
            if depth > worst:
                worst = depth
                if worst > budget.max_nesting:
                    raise TemplateError(f"chat template nests blocks and brackets deeper than "
                                        f"max_nesting={budget.max_nesting} (line {lineno})", "max_nesting")
    except TemplateSyntaxError as e:
        raise TemplateError(f"chat template does not parse: {e}") from None


_COMPILED: OrderedDict = OrderedDict()
_COMPILED_LOCK = threading.Lock()


def _compile(source: str, budget: TemplateBudget):
    key = (source, budget.max_nesting)
    with _COMPILED_LOCK:
        if key in _COMPILED:
            _COMPILED.move_to_end(key)
            return _COMPILED[key]
    env = _environment()
    _scan_nesting(env, source, budget)
    from jinja2.exceptions import TemplateError as JinjaError

    try:
        template = env.from_string(source)
    except TemplateError:
        raise
    except JinjaError as e:
        raise TemplateError(f"chat template does not parse: {e}") from None
    except (RecursionError, MemoryError, SyntaxError, ValueError, OverflowError) as e:
        raise TemplateError(f"chat template cannot be compiled ({type(e).__name__}: {str(e)[:200]}); "
                            f"it is nested or chained too deeply for max_nesting={budget.max_nesting}", "max_nesting") from None
    with _COMPILED_LOCK:
        _COMPILED[key] = template
        while len(_COMPILED) > _CACHE_SIZE:
            _COMPILED.popitem(last=False)
    return template


_JSON_SCALARS = (str, int, float, bool, type(None))


def _check_inputs(variables: dict, budget: TemplateBudget) -> None:
    """Size and depth of everything the template is given, walked without recursion."""
    total = 0
    stack = [(v, 1, k) for k, v in variables.items()]
    while stack:
        value, depth, where = stack.pop()
        if depth > budget.max_nesting:
            raise TemplateError(f"chat template input {where!r} is nested deeper than max_nesting="
                                f"{budget.max_nesting}", "max_nesting")
        if isinstance(value, str):
            total += len(value.encode("utf-8", "surrogatepass"))
        elif isinstance(value, dict):
            total += 2
            for k, v in value.items():
                if not isinstance(k, str):
                    raise TemplateError(f"chat template input {where!r}: keys must be strings; got {k!r}")
                total += len(k.encode("utf-8", "surrogatepass"))
                stack.append((v, depth + 1, where))
        elif isinstance(value, (list, tuple)):
            total += 2
            stack.extend((v, depth + 1, where) for v in value)
        elif isinstance(value, _JSON_SCALARS):
            total += 8
        else:
            raise TemplateError(f"chat template input {where!r} holds a {type(value).__name__}; pass JSON values "
                                "(str, number, bool, None, lists and dicts of them)")
        if total > budget.max_input_bytes:
            raise TemplateError(f"chat template inputs are over max_input_bytes={budget.max_input_bytes}",
                                "max_input_bytes")


def render_chat_template(source: str, variables: dict, budget: TemplateBudget | None = None) -> str:
    """Render the chat template `source` with `variables` under `budget` (default `TemplateBudget()`).

    Raises `TemplateError` (naming the limit) for an oversized, too deeply
    nested, too slow or too large template or input, and for any error the
    template raises on these variables. Safe to call from several threads.

    Example:
      >>> render_chat_template("{% for m in messages %}{{ m['content'] }};{% endfor %}",
      ...                      {"messages": [{"role": "user", "content": "hi"}]})
      'hi;'
    """
    budget = DEFAULT_BUDGET if budget is None else budget
    if not isinstance(budget, TemplateBudget):
        raise TypeError(f"budget must be a pdx.text.TemplateBudget; got {type(budget).__name__}")
    if not isinstance(source, str):
        raise TemplateError(f"chat template must be a str; got {type(source).__name__}")
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > budget.max_template_bytes:
        raise TemplateError(f"chat template is {size} bytes, over max_template_bytes={budget.max_template_bytes}",
                            "max_template_bytes")
    _check_inputs(variables, budget)
    state = _State(budget)
    token = _STATE.set(state)
    previous = sys.gettrace()
    sys.settrace(state.trace)  # the deadline covers the scan and compile of a new template too
    parts: list[str] = []
    try:
        template = _compile(source, budget)
        state.limit, state.deadline = "max_seconds", time.monotonic() + budget.max_seconds
        for chunk in template.generate(**variables):
            state.output += len(chunk)
            if state.output > budget.max_output_chars:
                raise TemplateError(f"chat template output is over max_output_chars={budget.max_output_chars}",
                                    "max_output_chars")
            parts.append(chunk)
    except TemplateError:
        raise
    except RecursionError:
        raise TemplateError("chat template recursed past Python's recursion limit (a macro or a recursive loop "
                            "calls itself too deeply; max_nesting covers recursion)", "max_nesting") from None
    except MemoryError:
        raise TemplateError("chat template ran out of memory before reaching max_work_chars", "max_work_chars") from None
    except Exception as e:  # noqa: BLE001 - any failure of untrusted template code on client input is the input's
        raise TemplateError(f"chat template failed on these messages: {type(e).__name__}: {str(e)[:500]}") from None
    finally:
        sys.settrace(previous)
        _STATE.reset(token)
    return "".join(parts)
