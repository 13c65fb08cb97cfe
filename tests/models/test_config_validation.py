"""Every config pdx reads is validated before anything is built: only `ConfigError` or a successful load.

Hypothesis mutates fields of valid tiny configs (a Hugging Face LLaMA and BERT
config.json, the zoo's own config.json overrides, a LoRA lora_config.json)
with hostile values (huge ints, 0, negatives, NaN, infinities, strings, lists,
bools, null, missing) and loads the directory: each case must either load or
raise `pdx.models.ConfigError` naming the file and field, within 2 s, and the
whole run must stay within 200 MB of memory above where it started.
"""

import json
import math
import resource
import shutil
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pdx
from pdx.models import ConfigError
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, save_hf_pretrained
from pdx.peft import LoRAConfig, LoRAModel

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

MISSING = "<missing>"
HOSTILE = st.one_of(
    st.sampled_from([10**12, 2**40, 2**24, 10**6, 8192, 0, -1, -(2**63), float("nan"), float("inf"), -float("inf"),
                     1e300, 0.5, "64", "x", "", [64], [], {}, {"a": 1}, True, False, None, MISSING]),
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4))
SETTINGS = settings(max_examples=40, deadline=2000, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
LLAMA_FIELDS = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta", "tie_word_embeddings",
                "model_type", "head_dim", "hidden_act", "rope_scaling", "attention_bias"]
BERT_FIELDS = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
               "hidden_act", "hidden_dropout_prob", "max_position_embeddings", "type_vocab_size", "layer_norm_eps",
               "pad_token_id", "model_type", "architectures", "num_labels", "id2label"]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _mutated(base: dict, changes: dict) -> dict:
    out = dict(base)
    for key, value in changes.items():
        if value == MISSING:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _only_config_error(call, file_name: str) -> bool:
    """Run `call`; True if it loaded, False if it raised a ConfigError (which must name a file); 2 s at most."""
    start = time.perf_counter()
    try:
        call()
        loaded = True
    except ConfigError as err:
        message = str(err)
        assert err.file and message, message
        loaded = False
    assert time.perf_counter() - start < 2.0
    return loaded


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cfg") / "llama"
    save_hf_pretrained(LlamaForCausalLM(LlamaConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=32),
                                        rngs=0), directory)
    return directory


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cfg") / "bert"
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                                                   num_attention_heads=2, intermediate_size=64,
                                                   max_position_embeddings=16)).save_pretrained(directory)
    return directory


def test_the_issue_cases_fail_fast_naming_file_field_and_value(llama_dir, tmp_path):
    base = json.loads((llama_dir / "config.json").read_text())
    target = tmp_path / "d"
    shutil.copytree(llama_dir, target)
    cases = [("hidden_size", 10**12), ("vocab_size", 10**9), ("intermediate_size", 2**24),
             ("num_hidden_layers", 10**6), ("num_attention_heads", 0), ("num_key_value_heads", "64"),
             ("model_type", ["llama"]), ("rope_theta", 0), ("rope_theta", -1.0), ("rope_theta", float("nan")),
             ("rms_norm_eps", -1), ("max_position_embeddings", True)]
    before = _peak_mb()
    for field, value in cases:
        (target / "config.json").write_text(json.dumps({**base, field: value}))
        start = time.perf_counter()
        with pytest.raises(ConfigError) as info:
            pdx.models.from_pretrained(target)
        assert time.perf_counter() - start < 2.0, field
        message = str(info.value)
        assert str(target / "config.json") in message and field in message and repr(value)[:20] in message, message
        assert info.value.field == field and "must be" in message, message
    # within the caps but far larger than the 0.5 MB on disk: refused from the headers, before building
    sized = {k: v for k, v in base.items() if k != "head_dim"}
    for field, value in {"hidden_size": 8192, "intermediate_size": 2**19, "num_hidden_layers": 1024}.items():
        (target / "config.json").write_text(json.dumps({**sized, field: value}))
        start = time.perf_counter()
        with pytest.raises(ConfigError, match="implies .* parameters"):
            pdx.models.from_pretrained(target, strict=False)
        assert time.perf_counter() - start < 2.0, field
    # the same rules for a config built in Python and for pdx's own config.json overrides
    with pytest.raises(ConfigError, match="num_attention_heads=0"):
        LlamaConfig.from_preset("tiny", num_attention_heads=0)
    with pytest.raises(ConfigError, match="rope_theta=nan"):
        pdx.models.create("llama-tiny", rope_theta=float("nan"))
    assert _peak_mb() - before < 200


def test_fuzzed_llama_config_json_loads_or_raises_config_error(llama_dir, tmp_path):
    base = json.loads((llama_dir / "config.json").read_text())
    target = tmp_path / "d"
    shutil.copytree(llama_dir, target)
    pdx.models.from_pretrained(target)  # warm: the first build traces the initializers
    before, outcomes = _peak_mb(), []

    @SETTINGS
    @given(st.dictionaries(st.sampled_from(LLAMA_FIELDS), HOSTILE, min_size=1, max_size=3))
    def case(changes):
        (target / "config.json").write_text(json.dumps(_mutated(base, changes)))
        outcomes.append(_only_config_error(lambda: pdx.models.from_pretrained(target), "config.json"))

    case()
    assert _peak_mb() - before < 200
    assert not all(outcomes), "every hostile config loaded"


def test_fuzzed_bert_config_json_loads_or_raises_config_error(bert_dir, tmp_path):
    base = json.loads((bert_dir / "config.json").read_text())
    target = tmp_path / "d"
    shutil.copytree(bert_dir, target)
    pdx.models.from_pretrained(target)
    before = _peak_mb()

    @settings(SETTINGS, max_examples=30)
    @given(st.dictionaries(st.sampled_from(BERT_FIELDS), HOSTILE, min_size=1, max_size=3))
    def case(changes):
        (target / "config.json").write_text(json.dumps(_mutated(base, changes)))
        _only_config_error(lambda: pdx.models.from_pretrained(target), "config.json")

    case()
    assert _peak_mb() - before < 200


def test_fuzzed_zoo_overrides_and_lora_config(tmp_path):
    model = pdx.models.create("llama-tiny", vocab_size=64)
    zoo = pdx.models.save_pretrained(model, tmp_path / "zoo", name="llama-tiny", vocab_size=64)
    base = json.loads((zoo / "config.json").read_text())
    lora_dir = tmp_path / "lora"
    LoRAModel(pdx.models.create("llama-tiny", vocab_size=64), LoRAConfig(r=4)).save_pretrained(lora_dir)
    lora_base = json.loads((lora_dir / "lora_config.json").read_text())
    before = _peak_mb()

    @settings(SETTINGS, max_examples=25)
    @given(st.dictionaries(st.sampled_from(["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                            "rope_theta", "scan_layers", "recompute", "not_a_field"]),
                           HOSTILE, min_size=1, max_size=2),
           st.sampled_from([None, "llama-tiny", ["llama-tiny"], 5, "nope"]))
    def zoo_case(changes, name):
        config = {**base, "overrides": _mutated(base["overrides"], changes)}
        if name is not None:
            config["pdx_model"] = name
        (zoo / "config.json").write_text(json.dumps(config))
        _only_config_error(lambda: pdx.models.from_pretrained(zoo), "config.json")

    @settings(SETTINGS, max_examples=25)
    @given(st.dictionaries(st.sampled_from(["r", "lora_alpha", "lora_dropout", "target_modules", "quantize",
                                            "group_size", "trainable_bias", "adapted"]),
                           st.one_of(HOSTILE, st.sampled_from([2**20, ["(", "*"], ["a" * 5000], 8])),
                           min_size=1, max_size=2))
    def lora_case(changes):
        (lora_dir / "lora_config.json").write_text(json.dumps(_mutated(lora_base, changes)))
        fresh = pdx.models.create("llama-tiny", vocab_size=64)
        _only_config_error(lambda: LoRAModel.from_pretrained(fresh, lora_dir), "lora_config.json")

    zoo_case()
    lora_case()
    assert _peak_mb() - before < 200
    (lora_dir / "lora_config.json").write_text(json.dumps({**lora_base, "r": 2**20}))
    with pytest.raises(ConfigError, match=r"r=1048576 is out of range"):
        LoRAModel.from_pretrained(pdx.models.create("llama-tiny", vocab_size=64), lora_dir)
    (lora_dir / "lora_config.json").write_text(json.dumps({**lora_base, "r": 8}))
    with pytest.raises(ConfigError, match="does not match the adapter weights"):
        LoRAModel.from_pretrained(pdx.models.create("llama-tiny", vocab_size=64), lora_dir)
    (lora_dir / "lora_config.json").write_text(json.dumps({**lora_base, "lora_alpha": "x"}))
    with pytest.raises(ConfigError, match="lora_alpha='x' is a str"):
        LoRAModel.from_pretrained(pdx.models.create("llama-tiny", vocab_size=64), lora_dir)
    assert math.isfinite(LoRAConfig(r=4, lora_alpha=8).scaling)
    assert np.isfinite(before)
