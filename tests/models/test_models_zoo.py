"""pdx.models' registry: list / create / save_pretrained / from_pretrained, checked against paddle and transformers."""

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.models


def test_list_counts_parameters_like_the_references(paddle):
    rows = {r["name"]: r for r in pdx.models.list()}
    assert {"llama-tiny", "lenet", "resnet18", "mobilenet_v2"} <= set(rows)
    for row in rows.values():
        assert set(row) == {"name", "family", "task", "config", "description", "inputs", "params"}
        json.dumps(row["config"])  # plain JSON values
    # paddle counts trainable parameters; BatchNorm statistics are its non-trainable ones
    for name, build in [("resnet18", paddle.vision.models.resnet18), ("mobilenet_v2", paddle.vision.models.mobilenet_v2),
                        ("lenet", paddle.vision.models.LeNet)]:
        ref = sum(int(np.prod(p.shape)) for p in build().parameters() if p.trainable)
        assert rows[name]["params"] == ref, name
    transformers = pytest.importorskip("transformers")
    cfg = dict(rows["llama-tiny"]["config"])
    hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg))
    assert rows["llama-tiny"]["params"] == hf.num_parameters()
    assert [r["name"] for r in pdx.models.list("llama", params=False)][0] == "llama-tiny"


def test_save_and_from_pretrained_round_trip(tmp_path):
    pdx.seed(3)
    model = pdx.models.create("lenet", num_classes=4)
    path = pdx.models.save_pretrained(model, tmp_path / "lenet", name="lenet", num_classes=4)
    assert json.loads((path / "config.json").read_text()) == {"pdx_model": "lenet", "overrides": {"num_classes": 4}}
    again = pdx.models.from_pretrained(path)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 1, 28, 28)), jnp.float32)
    model.eval(), again.eval()
    np.testing.assert_array_equal(np.asarray(model(x)), np.asarray(again(x)))


def test_from_pretrained_reads_paddle_pdparams(tmp_path, paddle):
    paddle.seed(0)
    net = paddle.vision.models.LeNet(num_classes=10)
    net.eval()
    paddle.save(net.state_dict(), str(tmp_path / "lenet.pdparams"))
    x = np.random.default_rng(1).normal(size=(3, 1, 28, 28)).astype("float32")
    ref = net(paddle.to_tensor(x)).numpy()
    model = pdx.models.from_pretrained(tmp_path / "lenet.pdparams", name="lenet")
    model.eval()
    np.testing.assert_allclose(np.asarray(model(jnp.asarray(x))), ref, rtol=1e-5, atol=1e-5)


def test_from_pretrained_reads_a_hugging_face_llama_directory(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                   attn_implementation="eager")
    hf = transformers.LlamaForCausalLM(cfg).eval()
    hf.save_pretrained(tmp_path / "hf", safe_serialization=True)
    model = pdx.models.from_pretrained(tmp_path / "hf")
    ids = np.random.default_rng(0).integers(0, 64, (2, 9))
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).logits.numpy()
    got = np.asarray(model(jnp.asarray(ids, jnp.int32)))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="no model named 'resnet19'.*pdx.models.list"):
        pdx.models.create("resnet19")
    with pytest.raises(ValueError, match="family='nope'"):
        pdx.models.list("nope")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        pdx.models.from_pretrained(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no weights"):
        pdx.models.from_pretrained(tmp_path / "empty", name="lenet")
    model = pdx.models.create("lenet", num_classes=4)
    path = pdx.models.save_pretrained(model, tmp_path / "four", name="lenet", num_classes=4)
    with pytest.raises(ValueError, match="shape"):
        pdx.models.from_pretrained(path, num_classes=10)
    (path / "config.json").write_text("[" * 100 + "]" * 100)
    with pytest.raises(ValueError, match="nesting depth"):
        pdx.models.from_pretrained(path)
    (path / "config.json").unlink()
    os.mkfifo(path / "config.json")  # a FIFO would block a plain read: refused before opening for data
    with pytest.raises(ValueError, match="FIFO|fifo|regular"):
        pdx.models.from_pretrained(path)
    (path / "config.json").unlink()
    (path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        pdx.models.from_pretrained(path)
    (path / "config.json").write_text(json.dumps({"model_type": "gpt9"}))
    with pytest.raises(ValueError, match="cannot tell which model.*pass name="):
        pdx.models.from_pretrained(path)
    with pytest.raises(ValueError, match="missing"):
        pdx.models.from_pretrained(path, name="resnet18")
    with pytest.raises(TypeError, match="JSON values"):
        pdx.models.save_pretrained(model, tmp_path / "x", name="lenet", num_classes=object())


def _random_inputs(specs, rng):
    """Inputs for registered specs: batch 2, dynamic lengths 8; ids stay in [0, 2)."""
    from pdx.export._cli import parse_input_spec

    arrays = []
    for i, text in enumerate(specs):
        spec = parse_input_spec(text, i)
        shape = [2 if d is None and j == 0 else (8 if d is None else d) for j, d in enumerate(spec.shape)]
        dtype = np.dtype(str(spec.dtype))
        arrays.append(rng.integers(0, 2, shape).astype(dtype) if dtype.kind in "iu"
                      else rng.normal(size=shape).astype(dtype))
    return arrays


SMALL = 2_000_000  # parameters: every zoo model up to this size is exported in CI


def test_every_small_zoo_model_exports_with_pdx_export(tmp_path, capsys):
    """`pdx export NAME` (registered inputs, no --input-spec) gives the eager model's outputs on the XLA runtime."""
    import jax

    from pdx.cli import main as pdx_cli

    rng = np.random.default_rng(0)
    names = [r["name"] for r in pdx.models.list() if r["params"] <= SMALL]
    assert "lenet" in names and "llama-tiny" in names
    for name in names:
        entry = pdx.models.get(name)
        assert entry.inputs, f"{name} registers no inputs"
        pdx.seed(0)
        model = pdx.models.create(name)
        model.eval()
        directory = tmp_path / name
        pdx.models.save_pretrained(model, directory / "saved", name=name)
        assert pdx_cli(["export", str(directory / "saved"), "--out", str(directory / "artifact")]) == 0, name
        inputs = _random_inputs(entry.inputs, rng)
        expected = model(*[jnp.asarray(a) for a in inputs])
        # a NamedTuple output is exported as a dict of its fields (flattened in key order)
        expected = jax.tree_util.tree_leaves(expected._asdict() if hasattr(expected, "_asdict") else expected)
        got = jax.tree_util.tree_leaves(pdx.export.load(directory / "artifact")(*inputs))
        assert len(got) == len(expected), name
        for g, e in zip(got, expected):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-4, err_msg=name)
    assert pdx_cli(["export", "lenet", "--out", str(tmp_path / "by-name")]) == 0
    assert pdx_cli(["export", "no-such-model", "--out", str(tmp_path / "x")]) == 2
    assert "zoo name" in capsys.readouterr().err


def test_pdx_models_command(tmp_path, capsys):
    from pdx.cli import main as pdx_cli

    assert pdx_cli(["models", "--family", "llama", "--json", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "| llama-7b | llama | causal-lm | 6.7B |" in out
    rows = json.loads((tmp_path / "m.json").read_text())
    assert {r["name"] for r in rows} >= {"llama-tiny", "llama-7b"} and all(r["family"] == "llama" for r in rows)
    assert pdx_cli(["models", "--family", "nope"]) == 2
    assert "family='nope'" in capsys.readouterr().err
