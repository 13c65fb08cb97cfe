"""Corrupt, truncated, empty and bit-flipped artifacts raise ArtifactError
before anything is deserialized; writing never clobbers a user's directory."""

import json
import shutil

import numpy as np
import pytest
from jax import export as jax_export

import pdx
import pdx.export
from pdx import nn
from pdx.export import ArtifactError
from pdx.jit import InputSpec


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    pdx.seed(0)
    net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    path = pdx.export.export(net, tmp_path_factory.mktemp("art") / "mlp", [InputSpec([None, 6], "float32", "x")],
                             targets=("xla", "iree-llvm-cpu"))
    return path


@pytest.fixture
def copy(artifact, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(artifact, target)
    return target


@pytest.fixture
def no_deserialize(monkeypatch):
    """Fail the test if anything reaches jax's deserializer."""
    def forbidden(*args, **kwargs):
        raise AssertionError("deserialize was called on an unverified artifact")
    monkeypatch.setattr(jax_export, "deserialize", forbidden)


LOADERS = {
    "xla": lambda p: pdx.export.load(p, runtime="xla"),
    "iree": lambda p: pdx.export.load(p, runtime="iree"),
    "jit": pdx.jit.load,
}


def test_intact_copy_loads(copy):
    x = np.linspace(-1, 1, 6, dtype=np.float32)[None]
    np.testing.assert_allclose(pdx.export.load(copy)(x), pdx.export.load(copy, runtime="iree")(x), atol=1e-5)


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_twenty_random_bit_flips_all_rejected(artifact, tmp_path, no_deserialize, loader):
    rng = np.random.default_rng({"xla": 1, "iree": 2, "jit": 3}[loader])
    names = sorted(p.name for p in artifact.iterdir())
    for trial in range(20):
        target = tmp_path / f"flip{trial}"
        shutil.copytree(artifact, target)
        victim = target / names[trial % len(names)]  # every file gets flipped, manifest included
        data = bytearray(victim.read_bytes())
        pos = int(rng.integers(len(data)))
        data[pos] ^= 1 << int(rng.integers(8))
        victim.write_bytes(bytes(data))
        with pytest.raises(ArtifactError):
            LOADERS[loader](target)


@pytest.mark.parametrize("name", ["manifest.json", "program.jaxexport", "params.safetensors", "iree-llvm-cpu.vmfb"])
@pytest.mark.parametrize("keep", [0, 0.5])
def test_truncated_or_empty_file_rejected(copy, no_deserialize, name, keep):
    victim = copy / name
    data = victim.read_bytes()
    victim.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ArtifactError, match=r"re-export|copy"):
        pdx.export.load(copy)


def test_missing_file_and_missing_directory(copy, tmp_path, no_deserialize):
    (copy / "params.safetensors").unlink()
    with pytest.raises(ArtifactError, match="params.safetensors is missing"):
        pdx.jit.load(copy)
    with pytest.raises(ArtifactError, match="not an artifact directory"):
        pdx.export.load(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArtifactError, match="manifest.json is missing"):
        pdx.export.load(tmp_path / "empty")


def test_consistent_rewrite_of_manifest_without_checksum_rejected(copy, no_deserialize):
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["inputs"][0]["shape"] = ["batch", 7]
    (copy / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, indent=1) + "\n")
    with pytest.raises(ArtifactError, match="altered"):
        pdx.export.load(copy)


def test_url_is_refused(no_deserialize):
    with pytest.raises(ValueError, match="URL"):
        pdx.export.load("https://example.com/model")


def test_export_does_not_overwrite_a_user_directory(tmp_path, artifact):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a pdx artifact"):
        pdx.export.export(nn.Linear(2, 2), mine, [InputSpec([None, 2])])
    assert (mine / "notes.txt").read_text() == "keep me"
    # an existing artifact is replaced
    again = tmp_path / "again"
    shutil.copytree(artifact, again)
    pdx.export.export(nn.Linear(2, 2), again, [InputSpec([None, 2])])
    assert pdx.export.load(again).input_specs[0].shape == (None, 2)
    assert not (again / "iree-llvm-cpu.vmfb").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
