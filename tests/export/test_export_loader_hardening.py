"""Every artifact loader (XLA and IREE predictors, pdx.jit.load, the CLI summary)
follows the one loader rule: devices, FIFOs, links outside the artifact and
deep JSON are one ArtifactError, fast and before anything is read; a manifest
with a valid checksum but entries pdx never writes is refused too; a bounded
fuzz pass finds nothing but ArtifactError or a correct load."""

import hashlib
import json
import os
import shutil
import threading
import time

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import pdx
import pdx.export
from pdx import nn
from pdx.export import ArtifactError
from pdx.export._cli import summary
from pdx.jit import InputSpec

X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)
FILES = ["manifest.json", "program.jaxexport", "params.safetensors", "iree-llvm-cpu.vmfb"]
LOADERS = {
    "xla": lambda p: pdx.export.load(p, runtime="xla"),
    "iree": lambda p: pdx.export.load(p, runtime="iree"),
    "jit": pdx.jit.load,
    "cli": summary,
}


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    pdx.seed(0)
    net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    net.eval()
    path = pdx.export.export(net, tmp_path_factory.mktemp("art") / "mlp", [InputSpec([None, 6], "float32", "x")],
                             targets=("xla", "iree-llvm-cpu"), iree={"batch_split": True})
    return path, np.asarray(net(pdx.to_tensor(X)))


@pytest.fixture
def copy(artifact, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(artifact[0], target)
    return target


def _unblock_fifo_later(fifo, seconds=2.0):
    """Open the FIFO's write end after `seconds`: a loader blocked on it returns (and the test fails on time)."""
    def run():
        time.sleep(seconds)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader: the loader refused the FIFO without opening it for reading
            pass
    threading.Thread(target=run, daemon=True).start()


def test_devices_fifos_and_outside_links_are_refused_fast(copy, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in FILES:
        victim = copy / name
        original = victim.read_bytes()
        (outside / name).write_bytes(original)  # identical bytes: only the link rule can refuse it
        for kind, pattern in (("dev-zero", "outside"), ("fifo", "a FIFO"), ("outside", "outside")):
            for loader_name, loader in LOADERS.items():
                if name != "manifest.json" and loader_name == "cli":
                    continue  # the summary reads only the manifest
                victim.unlink()
                if kind == "fifo":
                    os.mkfifo(victim)
                    _unblock_fifo_later(victim)
                else:
                    os.symlink("/dev/zero" if kind == "dev-zero" else outside / name, victim)
                t0 = time.monotonic()
                with pytest.raises(ArtifactError, match=pattern):
                    loader(copy)
                assert time.monotonic() - t0 < 1.0, (name, kind, loader_name)
                victim.unlink()
                victim.write_bytes(original)


def test_links_inside_the_artifact_and_a_linked_directory_load(artifact, copy, tmp_path):
    _, expected = artifact
    (copy / "data").mkdir()
    for name in ("params.safetensors", "program.jaxexport", "iree-llvm-cpu.vmfb"):
        os.rename(copy / name, copy / "data" / name)
        os.symlink(os.path.join("data", name), copy / name)
    os.symlink(copy, tmp_path / "linked")
    for loader_name in ("xla", "iree", "jit"):
        out = LOADERS[loader_name](tmp_path / "linked")(X)
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("text", ["[" * 100000, "{" * 50000, '{"a": ' * 20 + "1" + "}" * 20, "\xff\xfe[\x00",
                                  "", "null"], ids=["deep list", "deep dict", "nested", "not utf-8", "empty", "null"])
def test_deep_or_malformed_manifest_is_one_typed_error(copy, text):
    (copy / "manifest.json").write_bytes(text.encode("latin-1"))
    for loader in LOADERS.values():
        with pytest.raises(ArtifactError):
            loader(copy)


def test_a_grown_file_is_refused_before_it_is_read(copy):
    with open(copy / "params.safetensors", "ab") as f:
        f.write(b"\0" * 4096)
    with pytest.raises(ArtifactError, match="bytes were recorded"):
        pdx.export.load(copy)


# -- manifests with a valid checksum but entries pdx never writes -------------------------------

def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=True).encode("ascii") + b"\n"


def _rewrite(directory, mutate) -> None:
    """Refresh the files' sizes and sums, apply `mutate` to the manifest, write it back with a matching checksum."""
    manifest = json.loads((directory / "manifest.json").read_text())
    for name, meta in manifest["files"].items():
        if not (directory / name).is_file():
            continue
        data = (directory / name).read_bytes()
        meta.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    mutate(manifest)
    manifest.pop("manifest_sha256", None)
    manifest["manifest_sha256"] = hashlib.sha256(_canonical(manifest)).hexdigest()
    (directory / "manifest.json").write_bytes(_canonical(manifest))


def _set(*path, value):
    def mutate(m):
        node = m
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


def _drop(*path):
    def mutate(m):
        node = m
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return mutate


MUTATIONS = {
    "empty checksum table": _set("files", value={}),
    "no checksum table": _drop("files"),
    "program not listed": _drop("files", "program.jaxexport"),
    "size not an int": _set("files", "params.safetensors", "size", value="208"),
    "negative size": _set("files", "params.safetensors", "size", value=-1),
    "name outside": _set("files", "../escape", value={"size": 0, "sha256": ""}),
    "param shape": _set("params", 0, "shape", value=[6, 9]),
    "param shape type": _set("params", 0, "shape", value="6,8"),
    "param name": _set("params", 0, "name", value="0..weight"),
    "param name collides": _set("params", 0, "name", value="__class__"),
    "param dropped": lambda m: m["params"].pop(),
    "object dtype": _set("inputs", 0, "dtype", value="object"),
    "input rank": _set("inputs", 0, "shape", value=["batch"]),
    "inputs not a list": _set("inputs", value={"x": 1}),
    "vjp order": _set("program", "vjp_order", value="one"),
    "target file unlisted": _set("targets", "iree-llvm-cpu", "file", value="other.vmfb"),
    "unknown target": lambda m: m["targets"].update({"iree-mystery": dict(m["targets"]["iree-llvm-cpu"])}),
    "iree dims": _set("targets", "iree-llvm-cpu", "dims", value={"batch": 0}),
    "iree shapes": _set("targets", "iree-llvm-cpu", "input_shapes", value=[[1]]),
    "no name": _drop("name"),
}


# consistent manifests that disagree only with the program or parameter files
AGAINST_FILES = {"param shape", "param dropped", "input rank", "param name collides"}


def test_manifests_pdx_never_writes_are_refused(artifact, tmp_path):
    for label, mutate in MUTATIONS.items():
        target = tmp_path / label.replace(" ", "_")
        shutil.copytree(artifact[0], target)
        _rewrite(target, mutate)
        for loader_name, loader in LOADERS.items():
            if loader_name == "cli" and label in AGAINST_FILES:
                continue  # the summary reads only the manifest
            with pytest.raises(ArtifactError):
                print(label, loader_name)
                loader(target)


# -- a bounded fuzz pass over real artifact bytes ----------------------------------------------

def _json_values():
    leaves = st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats(allow_nan=False) | st.text(max_size=8)
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6),
                                                                                             inner, max_size=3),
                        max_leaves=6)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _check_load(path, expected, *, intact: bool):
    """Only ArtifactError, or a load that runs (or refuses bad input with a ValueError).

    An intact artifact must load and give `expected`; a changed one with broken
    checksums must be refused. A change whose checksums were made to match is
    a different valid artifact (a checksum is not a signature): it may load and
    compute something else, but only as an array of the declared shape.
    """
    try:
        predictor = pdx.export.load(path)
        summary(path)
    except ArtifactError:
        assert not intact, "an intact artifact was refused"
        return "refused"
    assert intact is not False, "a changed artifact with broken checksums loaded"
    try:
        layer = pdx.jit.load(path)
    except ArtifactError:  # e.g. a parameter name that collides with a Layer attribute
        assert not intact, "an intact artifact was refused by pdx.jit.load"
        layers = [predictor]
    else:
        layers = [predictor, layer]
    for run in layers:
        try:
            out = np.asarray(run(X))
        except ValueError:
            return "loaded, input refused"
        if intact:
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
        else:
            assert out.shape == expected.shape
    return "loaded"


def test_fuzz_artifact_loading(artifact, tmp_path):
    _, expected = artifact
    source = tmp_path / "xla-only"  # the IREE module is verified like any file; leave it out to keep this fast
    shutil.copytree(artifact[0], source, ignore=shutil.ignore_patterns("*.vmfb"))
    _rewrite(source, lambda m: (m["files"].pop("iree-llvm-cpu.vmfb"), m["targets"].pop("iree-llvm-cpu")))
    manifest = json.loads((source / "manifest.json").read_text())
    paths = [p for p in _paths(manifest) if p and p[0] not in ("files", "manifest_sha256", "format")]
    outcomes = {}
    counter = iter(range(10**6))

    @settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        target = tmp_path / f"f{next(counter)}"
        shutil.copytree(source, target)
        mode = data.draw(st.sampled_from(["bytes", "rechecksummed manifest", "rechecksummed params"]))
        if mode == "rechecksummed manifest":  # any entry replaced by any JSON value; checksums made to match
            path = data.draw(st.sampled_from(paths))
            _rewrite(target, _set(*path, value=data.draw(_json_values())))
            intact = None
        else:
            name = "params.safetensors" if mode == "rechecksummed params" else data.draw(
                st.sampled_from(["manifest.json", "program.jaxexport", "params.safetensors"]))
            blob = bytearray((target / name).read_bytes())
            for _ in range(data.draw(st.integers(1, 4))):
                pos = data.draw(st.integers(0, len(blob) - 1))
                blob[pos] = data.draw(st.integers(0, 255))
            cut = data.draw(st.sampled_from([None, 0, len(blob) // 2, len(blob) - 1]))
            blob = bytes(blob[:cut] if cut is not None else blob)
            intact = blob == (target / name).read_bytes()
            (target / name).write_bytes(blob)
            if mode == "rechecksummed params":  # the safetensors parser and the parameter checks see it
                _rewrite(target, lambda m: None)
                intact = True if intact else None
        outcome = _check_load(target, expected, intact=intact)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        shutil.rmtree(target)

    t0 = time.monotonic()
    run()
    print(f"fuzz: {sum(outcomes.values())} artifacts in {time.monotonic() - t0:.1f} s: {outcomes}")
    assert outcomes.get("refused", 0) > 0
