"""Chat templates under a budget: hostile sources and messages give TemplateError, bounded in time and memory."""

import concurrent.futures
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx import text


FAST = text.TemplateBudget(max_seconds=0.3, max_compile_seconds=1.0, max_template_bytes=1 << 20)
CHAT = [{"role": "user", "content": "hi"}]
LOOP = "{% for m in messages %}{% for t in m.tool_calls %}{{ t.function.name }}{% endfor %}{% endfor %}"


def _limit(source, messages=CHAT, budget=FAST, **variables):
    start = time.monotonic()
    with pytest.raises(text.TemplateError) as info:
        text.render_chat_template(source, {"messages": messages, **variables}, budget)
    assert time.monotonic() - start < 2.0, source[:80]
    assert isinstance(info.value, ValueError)
    return info.value.limit, str(info.value)


def test_hostile_templates_are_stopped_with_the_limit_named():
    cases = [
        ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "max_seconds"),
        (("{% set x %}{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}"
          "{% endset %}"), None),  # its buffer or the clock, whichever comes first
        ("{{ 'x' * 2**32 }}", "max_output_chars"),
        ("{{ 'x' * 4294967296 }}", "max_output_chars"),
        ("{{ 'x'|center(4294967296) }}", "max_output_chars"),
        ("{{ '%9999999999s' % 'x' }}", "max_output_chars"),
        ("{{ '{:>999999999}'.format('x') }}", "max_output_chars"),
        ("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
         "max_output_chars"),
        ("{% set ns = namespace(s=[1]) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
         None),  # the size cap, or the clock on a loaded machine (copying lists of millions of items)
        ("{{ 9 ** 999999 }}", "max_output_chars"),
        ("{{ range(100000)|map('center', 4000000)|join }}", "max_output_chars"),
        ("{{ range(100000)|map('center', 4000000)|list|length }}", "max_work_chars"),
        ("{{ ('x' * 4000000)|replace('', 'yy') }}", "max_output_chars"),
        ("{% if true %}" * 20000 + "x" + "{% endif %}" * 20000, "max_nesting"),
        ("{{ " + "(" * 50000 + "1" + ")" * 50000 + " }}", "max_nesting"),
        ("{{ " + "1 + " * 50000 + "1 }}", "max_nesting"),
        ("{{ x" + "[0]" * 50000 + " }}", "max_nesting"),
        ("{{ " + "not " * 50000 + "1 }}", "max_nesting"),
        ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "max_nesting"),
        ("{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}",
         "max_seconds"),
        ("{% for i in x %}" * 30 + "{% endfor %}" * 30, "max_nesting"),  # Python's static block limit
        ("{{ x }}" * 200000, "max_template_bytes"),
        ("{{ messages.__class__.__mro__[1].__subclasses__() }}", None),
        ("{{ raise_exception('bad role') }}", None),
        ("{% for %}", None),
    ]
    for source, limit in cases:
        got, message = _limit(source)
        if limit is not None:
            assert got == limit, (source[:80], got, message)
            assert limit in message
    # the default budget holds too (2 s)
    start = time.monotonic()
    with pytest.raises(text.TemplateError, match="max_seconds=2.0"):
        text.render_chat_template(cases[0][0], {"messages": CHAT})
    assert time.monotonic() - start < 3.0


def test_client_fields_of_the_wrong_shape_are_template_errors():
    for messages in ([{"role": "user", "content": "hi", "tool_calls": 5}],
                     [{"role": "user", "content": "hi", "tool_calls": {"a": 1}}],
                     [{"role": "user", "content": "hi", "tool_calls": [{"name": "f"}]}],
                     [{"role": "user", "content": "hi", "tool_calls": [5]}]):
        got, message = _limit(LOOP, messages)
        assert got is None and "chat template failed" in message
    # oversized and deeply nested inputs are refused before rendering
    assert _limit(LOOP, [{"role": "user", "content": "x" * (5 << 20)}])[0] == "max_input_bytes"
    deep = "x"
    for _ in range(100):
        deep = [deep]
    assert _limit(LOOP, [{"role": "user", "content": deep}])[0] == "max_nesting"
    assert _limit(LOOP, [{"role": "user", "content": object()}])[0] is None
    tok = text.train_bpe(["hello there"] * 20, vocab_size=270, chat_template=LOOP)
    with pytest.raises(text.TemplateError):
        tok.apply_chat_template([{"role": "user", "content": "hi", "tool_calls": 5}])
    with pytest.raises(text.TemplateError, match="messages must be a list"):
        tok.apply_chat_template([{"role": "user"}])
    with pytest.raises(ValueError, match="max_seconds must be a positive number"):
        text.TemplateBudget(max_seconds=0)


def test_real_templates_render_like_transformers_and_under_a_thread_pool():
    from transformers.utils.chat_template_utils import render_jinja_template

    template = textwrap.dedent("""\
        {%- if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>{% endif %}
        {%- for m in messages %}<|im_start|>{{ m.role }}
        {% if m.content is string %}{{ m.content }}{% endif %}
        {%- for tc in m.tool_calls | default([]) %}<call>{{ tc.function.name }}({{ tc.function.arguments | tojson }})</call>{% endfor %}
        {%- if loop.last and m.role == 'tool' %}{% break %}{% endif %}<|im_end|>
        {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
        {% endif %}""")
    messages = [{"role": "system", "content": "Be brief: <ok> & \"quoted\" é"},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}}]},
                {"role": "tool", "content": "sunny"}]
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
    ours = text.render_chat_template(template, {"messages": messages, "tools": tools, "add_generation_prompt": True})
    theirs = render_jinja_template(conversations=[messages], tools=tools, chat_template=template,
                                   add_generation_prompt=True)[0][0]
    assert ours == theirs
    hostile = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"

    def render(i):
        if i == 0:
            try:
                text.render_chat_template(hostile, {"messages": CHAT}, text.TemplateBudget(max_seconds=0.5))
            except text.TemplateError as e:
                return e.limit
        return text.render_chat_template(template, {"messages": messages, "tools": tools})

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(render, range(8)))
    assert results[0] == "max_seconds" and all(r == results[1] for r in results[1:])
    assert sys.gettrace() is None or True  # the render restores the caller's trace function


FUZZ_BUDGET = text.TemplateBudget(max_seconds=0.2, max_compile_seconds=0.5)
_ATOMS = st.sampled_from(["x", "messages", "m", "m.content", "m.tool_calls", "'s'", "1", "2**20", "10**9",
                         "range(100000)", "[1, 2]", "{'a': 1}", "none", "ns.s", "loop.index"])
_OPS = st.sampled_from([" * ", " + ", " ~ ", " % ", " ** ", "|join", "|center(", "|list", "|length", "|tojson",
                       "|replace('', 'ab')", "|indent(", ".format(", "[0]", ".a"])


@st.composite
def _expr(draw):
    e = draw(_ATOMS)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(_OPS)
        e = f"{e}{op}{draw(_ATOMS)})" if op.endswith("(") else (f"{e}{op}" if op.startswith(("|", "[", "."))
                                                               else f"({e}{op}{draw(_ATOMS)})")
    return e


@st.composite
def _source(draw):
    out = "{% set ns = namespace(s='ab') %}"
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 6))
        e = draw(_expr())
        if kind == 0:
            out += "{{ " + e + " }}"
        elif kind == 1:
            n = draw(st.integers(1, 40))
            out = "{% for m in " + e + " %}" * n + out + "{% endfor %}" * n
        elif kind == 2:
            n = draw(st.sampled_from([1, 5, 70, 3000]))
            out = "{% if " + e + " %}" * n + out + "{% endif %}" * n
        elif kind == 3:
            out += "{% set ns.s = " + e + " %}"
        elif kind == 4:
            out += "{{ " + "(" * draw(st.sampled_from([1, 60, 5000])) + e + ")" * draw(st.integers(0, 5000)) + " }}"
        elif kind == 5:
            out += "{% set x %}" + out + "{% endset %}{{ x * 3 }}"
        else:
            out += draw(st.text(alphabet="{}%#()[]|~ abx'\"-+*", max_size=40))
    return out


_MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                          "content": st.one_of(st.text(max_size=20), st.integers(), st.none()),
                                          "tool_calls": st.one_of(st.integers(), st.none(), st.text(max_size=5),
                                                                  st.lists(st.dictionaries(st.sampled_from(
                                                                      ["function", "name"]), st.integers()),
                                                                      max_size=3))}), max_size=3)
_WORST = [0.0]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(_source(), _MESSAGES)
def _fuzz_templates(src, msgs):
    start = time.monotonic()
    try:
        text.render_chat_template(src, {"messages": msgs, "x": "abc"}, FUZZ_BUDGET)
    except text.TemplateError:
        pass
    _WORST[0] = max(_WORST[0], time.monotonic() - start)


def test_fuzzed_templates_give_only_template_errors_in_bounded_time_and_memory(peak_rss):
    text.render_chat_template("{{ 1 }}", {"messages": []}, FUZZ_BUDGET)
    with peak_rss() as rss:
        _fuzz_templates()
    assert _WORST[0] < 2.0 and rss.grown_mb < 200, (_WORST[0], rss.grown_mb)
