"""Batch comparison for the loss tests: every pdx case in one compiled program, each against paddle."""

import jax
import jax.numpy as jnp
import numpy as np


def compare_cases(oracle, rng, cases, rtol=1e-5, atol=1e-5, grad_rtol=1e-4, grad_atol=1e-5):
    """cases: (label, pdx_fn(*arrays), paddle_fn(*tensors), numpy arrays, argnums to differentiate).

    Values within rtol/atol and gradients of sum(out * random cotangent) within
    grad_rtol/grad_atol. pdx runs every case inside one jax.jit (one compile);
    eager calls would compile each configuration separately.
    """
    refs, cots = [], []
    for label, _, ref_fn, arrays, argnums in cases:
        tensors = [oracle.t(a, grad=i in argnums) for i, a in enumerate(arrays)]
        out = ref_fn(*tensors)
        cot = rng.standard_normal(tuple(out.shape)).astype(np.float32)
        grads = []
        if argnums:
            (out * oracle.paddle.to_tensor(cot)).sum().backward()
            for i in argnums:
                assert tensors[i].grad is not None, f"{label}: paddle gave input {i} no gradient"
                grads.append(tensors[i].grad.numpy())
        refs.append((out.numpy(), grads))
        cots.append(cot)

    def run(all_arrays):
        results = []
        for (_, fn, _, _, argnums), arrays, cot in zip(cases, all_arrays, cots):
            def loss(diff, fn=fn, arrays=arrays, argnums=argnums, cot=cot):
                full = list(arrays)
                for i, x in zip(argnums, diff):
                    full[i] = x
                out = fn(*full)
                return jnp.sum(out * cot), out
            grads, out = jax.grad(loss, has_aux=True)([arrays[i] for i in argnums])
            results.append((out, grads))
        return results

    results = jax.jit(run)([[jnp.asarray(a) for a in arrays] for _, _, _, arrays, _ in cases])
    for (label, _, _, _, argnums), (out, grads), (ref, ref_grads) in zip(cases, results, refs):
        assert np.shape(out) == np.shape(ref), (label, np.shape(out), np.shape(ref))
        np.testing.assert_allclose(np.asarray(out), ref, rtol=rtol, atol=atol, err_msg=label)
        for i, g, rg in zip(argnums, grads, ref_grads):
            np.testing.assert_allclose(np.asarray(g), rg, rtol=grad_rtol, atol=grad_atol,
                                       err_msg=f"{label}: gradient of input {i}")
