"""pdx.device and the top-level device names: places, set_device/get_device, capability queries."""

import jax
import numpy as np
import pytest

import pdx


@pytest.fixture
def restore_default_device():
    yield
    jax.config.update("jax_default_device", None)


def test_places_name_jax_devices():
    cpu = jax.devices("cpu")[0]
    assert pdx.CPUPlace().jax_device() == cpu
    assert pdx.CUDAPinnedPlace().jax_device() == cpu
    assert repr(pdx.CPUPlace()) == "Place(cpu)" and repr(pdx.CUDAPlace(1)) == "Place(gpu:1)"
    assert pdx.CUDAPlace(0) == pdx.CUDAPlace(0) != pdx.CUDAPlace(1)
    for place in (pdx.CPUPlace(), [pdx.CPUPlace()], "cpu", cpu, None):
        assert pdx.device.as_jax_device(place) in (cpu, None)


def test_places_match_paddle_reprs(paddle):
    assert repr(pdx.CPUPlace()) == repr(paddle.CPUPlace())


def test_gpu_place_without_gpu_raises_clearly():
    if pdx.device.cuda.device_count():
        pytest.skip("a GPU is visible")
    with pytest.raises(ValueError, match=r"Place\(gpu:0\): JAX has no 'gpu' device"):
        pdx.CUDAPlace(0).jax_device()
    with pytest.raises(ValueError, match="no GPU is visible to JAX"):
        pdx.set_device("gpu")
    with pytest.raises(ValueError, match="places="):
        pdx.device.as_jax_device([pdx.CPUPlace(), pdx.CPUPlace()])
    with pytest.raises(TypeError, match="device must be"):
        pdx.set_device(1.5)


def test_set_and_get_device(restore_default_device, paddle):
    assert pdx.set_device("cpu") == pdx.CPUPlace()
    assert pdx.get_device() == paddle.get_device() == "cpu"
    assert next(iter(pdx.ones([2]).devices())).platform == "cpu"
    assert pdx.get_device(pdx.ones([2])) == "cpu"
    assert pdx.device.set_device(pdx.CPUPlace()) == pdx.CPUPlace()
    assert pdx.device.set_default_device("cpu") is paddle.device.set_default_device("cpu") is None
    assert pdx.device.get_default_device() == paddle.device.get_default_device() == "cpu"


def test_capability_queries_follow_jax_backends(paddle):
    has_gpu = bool(pdx.device.cuda.device_count())
    assert pdx.is_compiled_with_cuda() is (has_gpu and "rocm" not in str(jax.devices()[0].client.platform_version))
    assert pdx.is_compiled_with_xpu() is False and pdx.is_compiled_with_ipu() is False
    assert pdx.is_compiled_with_cinn() is False and pdx.is_compiled_with_distribute() is True
    assert pdx.is_compiled_with_custom_device("npu") is False
    assert "cpu" in pdx.device.get_all_device_type()
    assert pdx.device.get_available_device() == [f"gpu:{i}" for i in range(pdx.device.cuda.device_count())]
    if not has_gpu:
        assert pdx.device.get_available_device() == paddle.device.get_available_device() == []
        assert pdx.get_cudnn_version() is None and pdx.version.cuda() == "False"
        assert pdx.device.cuda.device_count() == paddle.device.cuda.device_count() == 0
        with pytest.raises(ValueError, match="no GPU is visible"):
            pdx.device.cuda.memory_allocated()
    pdx.device.synchronize()
    pdx.device.cuda.empty_cache()


def test_places_are_accepted_where_paddle_takes_them():
    from pdx.io import DataLoader, TensorDataset

    ds = TensorDataset([np.arange(8, dtype=np.float32).reshape(4, 2)])
    for places in (pdx.CPUPlace(), [pdx.CPUPlace()], "cpu"):
        (x,) = next(iter(DataLoader(ds, batch_size=2, places=places)))
        assert next(iter(x.devices())).platform == "cpu"
    assert pdx.to_tensor([1.0], place=pdx.CPUPlace()).tolist() == [1.0]
    pdx.disable_static(pdx.CPUPlace())
    jax.config.update("jax_default_device", None)
