"""``Tensor.register_post_accumulate_grad_hook``: the hook gets the leaf after backward has accumulated its ``.grad``
(the "optimizer step in backward" pattern), run the same way under PyTorch and Ember."""

import contextlib
import gc

import numpy as np
import pytest

import ember
from ember._tensor_grad import _POST_HOOKS


def _step_in_backward(lib):
    w = lib.tensor(np.array([[1.0, -2.0], [0.5, 3.0]]), requires_grad=True)
    b = lib.tensor(np.array([0.1, 0.2]), requires_grad=True)
    seen = []

    def hook(p):
        seen.append(p.grad.tolist())
        p.add_(p.grad, alpha=-0.1)  # in place on a leaf: allowed, as grad mode is off while hooks run
        p.grad = None

    handle = w.register_post_accumulate_grad_hook(hook)
    for i in range(3):
        x = lib.tensor(np.array([[1.0, 2.0], [3.0, -1.0]]) * (i + 1))
        (((x @ w) + b) ** 2 + x @ w).sum().backward()  # w on two paths: one call, on the sum
    handle.remove()
    (x @ w + b).sum().backward()
    return seen, w.tolist(), w.grad.tolist(), b.grad.tolist()


def test_an_optimizer_step_in_backward_matches_torch():
    torch = pytest.importorskip("torch")
    got, want = _step_in_backward(ember), _step_in_backward(torch)
    assert len(got[0]) == 3
    for g, t in zip(got, want, strict=True):
        np.testing.assert_allclose(np.array(g), np.array(t), rtol=1e-12)


def test_refused_on_non_leaves_and_on_tensors_without_grad():
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="require grad"):
        ember.ones(2).register_post_accumulate_grad_hook(lambda p: None)


def test_the_entry_goes_with_its_tensor():
    w = ember.ones(2, requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda p: None)
    key = id(w)
    assert key in _POST_HOOKS
    del w
    gc.collect()
    assert key not in _POST_HOOKS


def _per_parameter_sgd(compiled):
    ember.manual_seed(0)
    m = ember.nn.Linear(4, 3)
    opts = {p: ember.optim.SGD([p], lr=0.1, momentum=0.9) for p in m.parameters()}
    for p in m.parameters():
        p.register_post_accumulate_grad_hook(lambda p: (opts[p].step(), opts[p].zero_grad()))

    def step(x):
        loss = (m(x) ** 2).sum()
        loss.backward()
        return loss

    run = ember.compile(step) if compiled else step
    rng = np.random.RandomState(0)
    be = m.weight._backend
    # On torch-CUDA ember.compile replays a step as a CUDA graph where it can: an optimizer whose group updates one
    # parameter has no graph form, so the step replays as a plain program, with a note saying why (as on the CPU,
    # where no graph is made: tests/compile/test_compile_cuda_standin.py checks the note through its stand-in).
    graphs = compiled and be.name == "torch" and be.device.type == "cuda"
    with pytest.warns(UserWarning, match="no CUDA graph .*one parameter") if graphs else contextlib.nullcontext():
        losses = [run(ember.tensor(rng.randn(8, 4).astype(np.float32))).item() for _ in range(6)]
    return losses, m.weight.detach().numpy(), m.bias.detach().numpy()


def test_compiled_step_with_hooks_equals_eager():
    for e, c in zip(_per_parameter_sgd(False), _per_parameter_sgd(True), strict=True):
        np.testing.assert_array_equal(np.array(e), np.array(c))
