"""A load-time check of the regular expressions inside a tokenizer.json (pre-tokenizer and normalizer).

The tokenizers library runs them with Oniguruma, a backtracking engine:
a pattern like `(a+)+$` or `(a|a)*` takes exponential time on a short
string, and when Oniguruma's retry limit stops it the library panics. The
check is structural and conservative, on the pattern text:

- a pattern longer than `MAX_PATTERN_CHARS` is refused;
- a group repeated without bound (`*`, `+`, `{n,}`, `{n,m}` with m > 1)
  that itself contains an unbounded repetition is refused (nested
  quantifiers: `(a+)+`, `(?:\\s*x)*`);
- a group repeated without bound that holds an alternation is refused
  unless every branch is a plain literal and the branches start with
  different characters (`(?:ab|cd)+` passes, `(a|a)*`, `(a|ab)*` do not).

The patterns real tokenizers ship (GPT-2, LLaMA 3, Qwen, Mistral) pass.
"""

from __future__ import annotations

__all__ = ["MAX_PATTERN_CHARS", "regex_problem", "tokenizer_regexes"]

MAX_PATTERN_CHARS = 4096
_META = set("\\[](){}|*+?.^$")


def _quantifier_at(pattern: str, i: int) -> tuple[bool, int]:
    """(unbounded, index after) of a quantifier starting at i, or (False, i) if none."""
    if i >= len(pattern):
        return False, i
    c = pattern[i]
    if c in "*+":
        j = i + 1
    elif c == "?":
        return False, i + 1 + (i + 1 < len(pattern) and pattern[i + 1] in "?+")
    elif c == "{":
        close = pattern.find("}", i)
        body = pattern[i + 1:close] if close > 0 else ""
        lo, _, hi = body.partition(",")
        if close < 0 or not lo.strip().isdigit() or (hi.strip() and not hi.strip().isdigit()):
            return False, i  # a literal brace
        unbounded = ("," in body and not hi.strip()) or (hi.strip().isdigit() and int(hi) > 1) or (
            "," not in body and int(lo) > 1)
        j = close + 1
        if j < len(pattern) and pattern[j] in "?+":
            j += 1
        return unbounded, j
    else:
        return False, i
    if j < len(pattern) and pattern[j] in "?+":
        j += 1
    return True, j


def _split_top(body: str) -> list[str]:
    """The top-level alternation branches of a group body."""
    branches, depth, start, i = [], 0, 0, 0
    in_class = False
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            branches.append(body[start:i])
            start = i + 1
        i += 1
    branches.append(body[start:])
    return branches


def _group_body(body: str) -> str:
    """A group's body without its `?:`, `?i:`, `?<name>` prefix."""
    if body.startswith("?"):
        colon = body.find(":")
        close = body.find(">")
        if body.startswith(("?<", "?P<")) and close > 0 and body[2:3] not in "=!":
            return body[close + 1:]
        if colon > 0 and all(ch.isalpha() or ch == "-" for ch in body[1:colon]):
            return body[colon + 1:]
        return body[1:] if body[1:2] in "=!>" else body
    return body


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` can backtrack catastrophically, or None if the check finds nothing.

    Example:
      >>> regex_problem("(a+)+$")
      'a group with an unbounded repetition inside is itself repeated without bound: (a+)+'
      >>> regex_problem(r" ?\\p{L}+| ?\\p{N}+|\\s+(?!\\S)|\\s+") is None
      True
    """
    if not isinstance(pattern, str):
        return f"the pattern is a {type(pattern).__name__}, not a string"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"the pattern is {len(pattern)} characters, over {MAX_PATTERN_CHARS}"
    # stack of [start index, holds an unbounded repetition]
    stack: list[list] = []
    i, in_class = 0, False
    levels = [False]  # per open group: an unbounded repetition seen inside it
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            if i <= len(pattern) and pattern[i - 1:i] in ("p", "P", "x", "u") and pattern[i:i + 1] == "{":
                close = pattern.find("}", i)
                i = close + 1 if close > 0 else i
            unbounded, i = _quantifier_at(pattern, i)
            levels[-1] = levels[-1] or unbounded
            continue
        if in_class:
            in_class = c != "]"
            i += 1
            if not in_class:
                unbounded, i = _quantifier_at(pattern, i)
                levels[-1] = levels[-1] or unbounded
            continue
        if c == "[":
            in_class = True
            i += 1
            if i < len(pattern) and pattern[i] == "^":
                i += 1
            if i < len(pattern) and pattern[i] == "]":
                i += 1
            continue
        if c == "(":
            stack.append(i)
            levels.append(False)
            i += 1
            continue
        if c == ")" and stack:
            start = stack.pop()
            inner = levels.pop()
            unbounded, j = _quantifier_at(pattern, i + 1)
            if unbounded:
                text = pattern[start:j]
                if inner:
                    return f"a group with an unbounded repetition inside is itself repeated without bound: {text}"
                branches = _split_top(_group_body(pattern[start + 1:i]))
                if len(branches) > 1 and not (
                        all(b and not (set(b) & _META) for b in branches)
                        and len({b[0] for b in branches}) == len(branches)):
                    return f"an alternation whose branches may overlap is repeated without bound: {text}"
            levels[-1] = levels[-1] or unbounded or inner
            i = j
            continue
        unbounded, j = _quantifier_at(pattern, i + 1) if c not in "|^$" else (False, i + 1)
        levels[-1] = levels[-1] or unbounded
        i = max(j, i + 1)
    return None


def tokenizer_regexes(config: dict) -> list[tuple[str, str]]:
    """(where, pattern) of every {"Regex": ...} in a tokenizer.json's normalizer / pre_tokenizer / decoder."""
    found = []
    stack = [(config.get(key), key) for key in ("normalizer", "pre_tokenizer", "decoder", "post_processor")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "Regex":
                    found.append((where, v))
                else:
                    stack.append((v, f"{where}.{k}"))
        elif isinstance(node, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
    return found
