"""pdx.inference runs what pdx.jit.save wrote, under the file names a Paddle Inference script uses."""

from __future__ import annotations

import numpy as np
import pytest

import pdx
import pdx.inference as paddle_infer


def _net(lib):
    nn = lib.nn

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2D(8)
            self.pool = nn.MaxPool2D(2, 2)
            self.fc = nn.Linear(8 * 8 * 8, 5)

        @lib.jit.to_static
        def forward(self, x):
            x = self.pool(nn.functional.relu(self.bn(self.conv(x))))
            x = lib.reshape(lib.flatten(x), [x.shape[0], -1])  # Paddle's idiom: the batch read from the shape
            return self.fc(x)

    return Net()


def test_paddle_inference_script_runs_a_pdx_jit_save(paddle, tmp_path):
    """Config(prefix.json | .pdmodel, prefix.pdiparams) -> handles -> run -> copy_to_cpu, at other batch sizes."""
    paddle.seed(0)
    ref = _net(paddle)
    ref.eval()
    net = _net(pdx)
    net.set_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    net.eval()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 16, 16)).astype(np.float32)
    net(pdx.to_tensor(x))  # the to_static forward has run: jit.save needs no input_spec
    prefix = tmp_path / "simple" / "demo"
    pdx.jit.save(net, str(prefix))
    for model_file in (f"{prefix}.json", f"{prefix}.pdmodel", str(prefix)):
        config = paddle_infer.Config(model_file, f"{prefix}.pdiparams")
        config.disable_gpu()
        config.set_cpu_math_library_num_threads(2)
        predictor = paddle_infer.create_predictor(config)
        for batch in (1, 3, 7):
            data = rng.standard_normal((batch, 3, 16, 16)).astype(np.float32)
            handle = predictor.get_input_handle(predictor.get_input_names()[0])
            handle.reshape([batch, 3, 16, 16])
            handle.copy_from_cpu(data)
            assert predictor.run() is True
            out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
            want = ref(paddle.to_tensor(data)).numpy()
            np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
        clone_out = predictor.clone().run([data])[0]
        np.testing.assert_allclose(clone_out, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(Exception, match="does not exist"):  # neither a Paddle program nor a pdx artifact
        paddle_infer.create_predictor(paddle_infer.Config(f"{tmp_path}/other.json", f"{tmp_path}/other.pdiparams"))


def test_model_save_for_inference_runs_in_paddle_inference_form(tmp_path):
    """hapi `Model.save(path, training=False)` writes the inference program too, as Paddle's does."""
    pdx.seed(0)
    net = pdx.nn.Sequential(pdx.nn.Linear(6, 8), pdx.nn.ReLU(), pdx.nn.Dropout(0.5), pdx.nn.Linear(8, 3))
    model = pdx.Model(net, inputs=[pdx.static.InputSpec([None, 6], "float32", "x")])
    model.prepare(pdx.optimizer.Adam(parameters=model.parameters()), pdx.nn.CrossEntropyLoss())
    x = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32)
    model.save(str(tmp_path / "infer"), training=False)
    want = model.predict((x,), batch_size=5, stack_outputs=True, verbose=0)[0]
    predictor = paddle_infer.create_predictor(paddle_infer.Config(f"{tmp_path}/infer.pdmodel",
                                                                  f"{tmp_path}/infer.pdiparams"))
    np.testing.assert_allclose(predictor.run([x])[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pdx.jit.load(str(tmp_path / "infer"))(x)), want, rtol=1e-5, atol=1e-6)
    assert net.training  # the network is back in the mode it was in
    bare = pdx.Model(net)
    with pytest.warns(UserWarning, match="inputs"):
        bare.save(str(tmp_path / "bare"), training=False)
