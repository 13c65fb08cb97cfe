"""Paddle programs with control flow (`pd_op.if`, `pd_op.while` and their blocks) as Paddle Inference runs them.

Layers whose `forward` branches and loops on tensors are converted by `paddle.jit.to_static(full_graph=True)` and
saved by `paddle.jit.save` (PIR JSON; paddle 3.3.1's legacy saver refuses these programs). pdx's predictor, on the
same files and inputs, must equal `paddle.inference.create_predictor`: every branch taken, loops whose trip count
depends on the data, a branch inside a loop, a loop inside a branch, at more than one batch size. The imported
program also runs as a `PaddleTranslatedLayer`, eagerly, under `pdx.jit`, and differentiated through its branch.
"""

from __future__ import annotations

import numpy as np
import pytest

import pdx
from pdx import inference


def _layers(paddle):
    nn = paddle.nn

    class Branch(nn.Layer):
        """if on a tensor: the two blocks compute different things from the same value."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            if x.mean() > 0:
                y = paddle.tanh(y) * 2 + 1
            else:
                y = y - 3
            return y

    class Counted(nn.Layer):
        """while over a counter: three applications of a layer."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            i = paddle.zeros([1], "int64")
            n = paddle.full([1], 3, "int64")
            while i < n:
                x = paddle.tanh(self.fc(x))
                i = i + 1
            return x

    class Halving(nn.Layer):
        """while whose trip count depends on the data (and a second condition)."""

        def forward(self, x):
            steps = paddle.zeros([1], "float32")
            while paddle.logical_and(x.abs().max() > 0.1, steps < 30):
                x = x * 0.5
                steps = steps + 1
            return x, steps

    class Nested(nn.Layer):
        """an if inside a while, and a while inside an if."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            i = paddle.zeros([1], "int64")
            while i < 4:
                if i % 2 == 0:
                    x = self.fc(x)
                else:
                    x = paddle.nn.functional.relu(x) - 0.5
                i = i + 1
            if x.sum() > 0:
                j = paddle.zeros([1], "int64")
                while j < 2:
                    x = x * 1.5
                    j = j + 1
            else:
                x = -x
            return x

    return {"branch": Branch, "counted": Counted, "halving": Halving, "nested": Nested}


def _inputs(name: str, batch: int) -> list[np.ndarray]:
    """Inputs that take each branch: positive, negative and mixed rows."""
    rng = np.random.default_rng(batch)
    base = rng.standard_normal((batch, 4)).astype("float32")
    out = [np.abs(base) + 0.1, -np.abs(base) - 0.1, base]
    if name == "halving":
        out.append(base * 40)
    return out


@pytest.fixture(scope="module")
def saved(paddle, tmp_path_factory):
    """{name: (model directory, {batch: [(input, paddle inference's outputs)]})}"""
    from paddle import inference as paddle_inference
    from paddle.static import InputSpec

    root = tmp_path_factory.mktemp("paddle_control_flow")
    paddle.seed(7)
    out = {}
    for name, cls in _layers(paddle).items():
        layer = cls()
        layer.eval()
        static = paddle.jit.to_static(layer, input_spec=[InputSpec([None, 4], "float32", "x")], full_graph=True)
        paddle.jit.save(static, str(root / name / "model"))
        config = paddle_inference.Config(str(root / name / "model.json"), str(root / name / "model.pdiparams"))
        config.disable_glog_info()
        predictor = paddle_inference.create_predictor(config)
        cases = {}
        for batch in (1, 5):
            cases[batch] = []
            for x in _inputs(name, batch):
                handle = predictor.get_input_handle(predictor.get_input_names()[0])
                handle.reshape(list(x.shape))
                handle.copy_from_cpu(x)
                predictor.run()
                cases[batch].append((x, [predictor.get_output_handle(n).copy_to_cpu()
                                         for n in predictor.get_output_names()]))
        out[name] = (root / name, cases)
    return out


def test_control_flow_programs_equal_paddle_inference(saved):
    control = {"branch": "pd_op.if", "counted": "pd_op.while", "halving": "pd_op.while", "nested": "pd_op.if"}
    for name, (path, cases) in saved.items():
        program = inference.PaddleProgram(path / "model.json", path / "model.pdiparams")
        assert control[name] in {op.name for op in program.program.ops}, name
        for eager in (False, True):
            config = inference.Config(str(path))
            if eager:
                config.switch_ir_optim(False)  # op by op: the branches and loops run eagerly
            predictor = inference.create_predictor(config)
            for batch, runs in cases.items():
                for x, want in runs:
                    got = predictor.run([x])
                    assert len(got) == len(want), name
                    for g, w in zip(got, want):
                        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5,
                                                   err_msg=f"{name} batch {batch} eager={eager}")
    # the cases reach both sides of every branch and loops of different lengths
    branch = [w[0] for _, w in saved["branch"][1][1]]
    assert branch[0].min() > -1 and branch[1].max() < -1, "the positive and negative inputs took one branch"
    steps = sorted({float(w[1].reshape(-1)[0]) for _, w in saved["halving"][1][5]})
    assert len(steps) >= 2 and steps[-1] > 5, steps


def test_translated_layer_with_a_branch_runs_jits_and_differentiates(saved):
    path, cases = saved["branch"]
    net = pdx.jit.load(str(path / "model"))
    assert isinstance(net, inference.PaddleTranslatedLayer)
    for x, (want,) in cases[5]:
        np.testing.assert_allclose(np.asarray(net(x)), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(pdx.jit(net)(x)), want, rtol=1e-5, atol=1e-5)
    x_pos, x_neg = cases[5][0][0], cases[5][1][0]

    def loss_fn(model, x):
        return model(x).sum()

    # the false branch is y - 3 (its weight gradient is the column sums of x); the true branch goes through tanh
    _, grads = pdx.value_and_grad(loss_fn)(net, x_neg)
    (weight,) = [k for k in grads if k.endswith(".w_0")]
    np.testing.assert_allclose(np.asarray(grads[weight]), np.tile(x_neg.sum(0)[:, None], (1, 4)), rtol=1e-5)
    _, grads_pos = pdx.value_and_grad(loss_fn)(net, x_pos)
    assert not np.allclose(np.asarray(grads_pos[weight]), np.tile(x_pos.sum(0)[:, None], (1, 4)))


def _rewrite_json(path, edit):
    import json

    doc = json.loads((path / "model.json").read_text())
    edit(doc["program"]["regions"][0]["blocks"][0]["ops"])
    (path / "model.json").write_text(json.dumps(doc))


def test_malformed_control_flow_is_refused_naming_the_op(saved, tmp_path):
    import shutil

    def control_op(ops, name):
        return next(op for op in ops if op["#"] == f"1.{name}")

    def drop_yield(ops):
        control_op(ops, "while")["regions"][0]["blocks"][0]["ops"].pop()

    def foreign_value(ops):  # the body reads a value defined after the loop
        body = control_op(ops, "while")["regions"][0]["blocks"][0]["ops"]
        body[0]["I"][0] = {"%": 10 ** 6}

    def one_branch(ops):
        control_op(ops, "if")["regions"].pop()

    def deep(ops):  # blocks nested far deeper than any program needs
        op = control_op(ops, "if")
        node = op
        for _ in range(9):
            inner = {"#": "1.if", "I": op["I"], "O": [], "regions": [{"blocks": [{"args": [], "ops": [
                {"#": "2.yield", "I": [], "O": []}]}]}]}
            node["regions"][0]["blocks"][0]["ops"].insert(0, inner)
            node = inner

    cases = [("counted", drop_yield, "does not end in cf.yield"), ("counted", foreign_value, "used before"),
             ("branch", one_branch, "needs 2 block"), ("branch", deep, "nest deeper|nesting depth")]
    for name, edit, message in cases:
        target = tmp_path / f"{name}_{edit.__name__}"
        shutil.copytree(saved[name][0], target)
        _rewrite_json(target, edit)
        with pytest.raises(inference.ModelFormatError, match=message) as info:
            inference.create_predictor(inference.Config(str(target))).run([np.ones((2, 4), "float32")])
        assert "model.json" in str(info.value), str(info.value)
        assert "op #" in str(info.value) or edit is deep, str(info.value)  # the JSON depth cap names no op


def test_onnx_files_of_the_control_flow_programs_equal_paddle_inference(saved, tmp_path):
    """pdx.onnx writes the imported branches and loops as ONNX If and Loop; onnxruntime equals Paddle Inference."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from pdx.static import InputSpec

    for name, (path, cases) in saved.items():
        net = pdx.jit.load(str(path / "model"))
        file = pdx.onnx.export(net, str(tmp_path / name), [InputSpec([None, 4], "float32", "x")])
        onnx.checker.check_model(str(file))
        ops = {n.op_type for n in onnx.load(str(file)).graph.node}
        assert ops & {"If", "Loop"}, (name, ops)
        session = ort.InferenceSession(str(file), providers=["CPUExecutionProvider"])
        for batch, runs in cases.items():
            for x, want in runs:
                got = session.run(None, {session.get_inputs()[0].name: x})
                for g, w in zip(got, want):
                    assert g.shape == w.shape, (name, g.shape, w.shape)
                    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{name} batch {batch}")


def test_fuzzed_control_flow_programs_load_or_raise_the_typed_error(saved, tmp_path):
    """Byte flips and dropped fields anywhere in a program with nested blocks: ModelFormatError, or a program."""
    import json
    import shutil
    import time

    source = saved["nested"][0]
    target = tmp_path / "fuzzed"
    shutil.copytree(source, target)
    raw = (source / "model.json").read_bytes()
    doc = json.loads(raw)
    rng = np.random.default_rng(0)

    def load():
        start = time.perf_counter()
        try:
            inference.PaddleProgram(target / "model.json", target / "model.pdiparams")
        except inference.ModelFormatError as e:
            assert "model.json" in str(e)
        assert time.perf_counter() - start < 10

    for _ in range(150):
        bad = bytearray(raw)
        for pos in rng.integers(0, len(bad), 3):
            bad[int(pos)] = int(rng.integers(32, 127))
        (target / "model.json").write_bytes(bytes(bad))
        load()

    def nodes(node):  # every dict inside the program (ops, regions, blocks, values, attributes)
        if isinstance(node, dict):
            yield node
            for v in node.values():
                yield from nodes(v)
        elif isinstance(node, list):
            for v in node:
                yield from nodes(v)

    for _ in range(150):
        mutated = json.loads(raw)
        victims = list(nodes(mutated["program"]))
        victim = victims[int(rng.integers(0, len(victims)))]
        key = sorted(victim)[int(rng.integers(0, len(victim)))] if victim else None
        if key is not None:
            choice = int(rng.integers(0, 3))
            if choice == 0:
                del victim[key]
            else:
                victim[key] = [None, -1, "x", {}, [], 10 ** 9][int(rng.integers(0, 6))]
        (target / "model.json").write_text(json.dumps(mutated))
        load()
    assert doc["program"]  # the source program itself is untouched
