"""Sharded Hugging Face directories (model.safetensors.index.json + model-0000i-of-0000N.safetensors).

A tiny LLaMA written by transformers itself (`save_pretrained(max_shard_size=...)`)
loads through `pdx.models.from_pretrained` and `llama.load_hf_safetensors` with
transformers' logits; hostile index files (paths out of the directory, a tensor
in two shards, a tensor listed but absent, a missing shard, shapes that lie)
raise `pdx.models.ConfigError`; `strict=False` names what it skipped and never
loads a tensor of another shape.
"""

import json
import os
import shutil
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.models import ConfigError
from pdx.models.llama import LlamaForCausalLM, config_from_hf, load_hf_safetensors

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

INDEX = "model.safetensors.index.json"
IDS = np.random.default_rng(0).integers(0, 96, (2, 12))


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """(directory, transformers' logits) of a 2+-shard LLaMA directory written by transformers."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                      rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # norms away from 1 so a skipped norm weight would show
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    directory = tmp_path_factory.mktemp("hf") / "llama"
    model.save_pretrained(directory, max_shard_size="200KB", safe_serialization=True)
    with torch.no_grad():
        logits = model(torch.tensor(IDS)).logits.numpy()
    return directory, logits


def _copy(directory, tmp_path, name="copy"):
    target = tmp_path / name
    shutil.copytree(directory, target)
    return target


def _index(directory):
    return json.loads((directory / INDEX).read_text())


def _write_index(directory, index):
    (directory / INDEX).write_text(json.dumps(index))


def model_config(directory):
    return config_from_hf(json.loads((directory / "config.json").read_text()))


def test_a_transformers_sharded_llama_loads_with_its_logits(sharded):
    directory, ref = sharded
    shards = sorted(p.name for p in directory.glob("*.safetensors"))
    assert model_config(directory).rope_theta == 500000.0  # transformers 5 writes it inside rope_parameters
    assert len(shards) >= 2 and (directory / INDEX).is_file(), shards
    model = pdx.models.from_pretrained(directory)
    got = np.asarray(model(jnp.asarray(IDS, jnp.int32)))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)

    # llama's own loader reads the directory the same way
    again = LlamaForCausalLM(model_config(directory))
    assert load_hf_safetensors(again, str(directory)) == ([], [])
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(np.asarray(again.state_dict()[key]), np.asarray(value))


def test_hostile_index_files_raise_the_typed_error(sharded, tmp_path):
    directory, _ = sharded
    index = _index(directory)
    names = sorted(index["weight_map"])
    first, second = sorted(set(index["weight_map"].values()))[:2]
    outside = tmp_path / "outside.safetensors"
    shutil.copy(directory / first, outside)

    cases = {
        "parent": lambda d: _write_index(d, {"weight_map": {**index["weight_map"], names[0]: "../" + first}}),
        "absolute": lambda d: _write_index(d, {"weight_map": {**index["weight_map"], names[0]: str(outside)}}),
        "symlink": lambda d: (os.remove(d / first), os.symlink(outside, d / first)),
        "missing shard": lambda d: os.remove(d / second),
        "listed, absent": lambda d: _write_index(d, {"weight_map": {**index["weight_map"], "model.extra": first}}),
        "not a map": lambda d: _write_index(d, {"weight_map": ["x"]}),
        "deep": lambda d: (d / INDEX).write_text("[" * 200 + "]" * 200),
    }
    expect = {"parent": "outside|relative", "absolute": "relative", "symlink": "outside", "missing shard": "does not exist",
              "listed, absent": "do not hold", "not a map": "weight_map", "deep": "nesting depth"}
    for case, spoil in cases.items():
        target = _copy(directory, tmp_path, case.replace(" ", "_").replace(",", ""))
        spoil(target)
        with pytest.raises(ConfigError, match=expect[case]) as info:
            pdx.models.from_pretrained(target)
        assert INDEX in str(info.value) or case == "symlink", (case, str(info.value))

    # a tensor stored in two shards (the index can name only one of them)
    target = _copy(directory, tmp_path, "duplicate")
    one = safetensors_numpy.load_file(str(target / first))
    two = safetensors_numpy.load_file(str(target / second))
    stolen = sorted(one)[0]
    safetensors_numpy.save_file({**two, stolen: one[stolen]}, str(target / second), metadata={"format": "pt"})
    with pytest.raises(ConfigError, match="two shards"):
        pdx.models.from_pretrained(target)


def test_shapes_that_lie_fail_strict_and_are_skipped_not_loaded_otherwise(sharded, tmp_path):
    directory, _ = sharded
    index = _index(directory)
    name = "model.layers.0.mlp.gate_proj.weight"
    shard = index["weight_map"][name]

    # the config lies: a smaller intermediate_size than the weights
    target = _copy(directory, tmp_path, "config")
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "intermediate_size": 88}))
    with pytest.raises(ConfigError, match=r"mlp\..*must be shape"):
        pdx.models.from_pretrained(target)

    # a shard lies: one tensor of another shape; strict=False skips it, names it, keeps the initial value
    target = _copy(directory, tmp_path, "shard")
    tensors = safetensors_numpy.load_file(str(target / shard))
    tensors[name] = np.ones((176, 32), np.float32)
    safetensors_numpy.save_file(tensors, str(target / shard), metadata={"format": "pt"})
    with pytest.raises(ConfigError, match="gate_proj"):
        pdx.models.from_pretrained(target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = pdx.models.from_pretrained(target, strict=False)
    message = " ".join(str(w.message) for w in caught)
    assert name in message and "another shape" in message, message
    assert model.state_dict()[name].shape == (64, 176)
    assert not np.any(np.asarray(model.state_dict()[name]) == 1.0)

    # a tensor absent from both the shard and the index: strict names it, strict=False warns
    target = _copy(directory, tmp_path, "absent")
    tensors = safetensors_numpy.load_file(str(target / shard))
    del tensors[name]
    safetensors_numpy.save_file(tensors, str(target / shard), metadata={"format": "pt"})
    _write_index(target, {"weight_map": {k: v for k, v in index["weight_map"].items() if k != name}})
    with pytest.raises(ConfigError, match="missing"):
        pdx.models.from_pretrained(target)
    with pytest.warns(UserWarning, match="gate_proj"):
        pdx.models.from_pretrained(target, strict=False)


def test_a_sharded_bert_directory_loads_like_the_single_file(tmp_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=32)
    hf = transformers.BertModel(config).eval()
    hf.save_pretrained(tmp_path / "one", safe_serialization=True)
    hf.save_pretrained(tmp_path / "many", max_shard_size="40KB", safe_serialization=True)
    assert (tmp_path / "many" / INDEX).is_file()
    ids = np.random.default_rng(1).integers(1, 60, (2, 7))
    many = pdx.models.from_pretrained(tmp_path / "many").eval()
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).last_hidden_state.numpy()
    np.testing.assert_allclose(np.asarray(many(jnp.asarray(ids, jnp.int32))[0]), ref, rtol=1e-4, atol=1e-4)
    one = pdx.models.bert.load_hf_bert(tmp_path / "one")  # the family's own loader, one file
    for key, value in many.state_dict().items():
        np.testing.assert_array_equal(np.asarray(one.state_dict()[key]), np.asarray(value))
