"""``ember.compiler``, ``ember._dynamo``, ``ember.jit``, ``ember.nn.attention``, ``ember.utils.hooks``: the names
model and library code calls, each run beside PyTorch where PyTorch's behaviour is the reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember._compile._tracer import CaptureError


def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))


# -- ember.compiler / ember._dynamo --------------------------------------------------------------------------------


def test_is_compiling_is_true_only_while_a_call_is_recorded():
    seen = []

    def f(x):
        seen.append(ember.compiler.is_compiling())
        return x * 2

    g = ember.compile(f)
    x = ember.ones(3)
    for _ in range(4):
        assert g(x).tolist() == [2.0, 2.0, 2.0]
    # the capture records (True); the checked second call runs eagerly beside the replay (False); replays run no Python
    assert seen == [True, False] and not ember.compiler.is_compiling()


def test_a_disabled_function_makes_the_compiled_function_eager_with_a_warning_naming_the_line():
    @ember.compiler.disable
    def noisy(x):
        return x + 1

    def f(x):
        return noisy(x) * 3

    g = ember.compile(f)
    x = ember.arange(3.0)
    with pytest.warns(UserWarning, match=r"noisy is marked ember.compiler.disable.*test_compiler_jit_names.py:\d+"):
        out = g(x)
    assert out.tolist() == [3.0, 6.0, 9.0]
    for _ in range(3):
        assert g(x + 1).tolist() == [6.0, 9.0, 12.0]
    assert g.stats["replays"] == 0 and g.stats["captures"] <= 1

    h = ember.compile(f, fullgraph=True)
    with pytest.raises(CaptureError, match=r"noisy is marked ember\.compiler\.disable"):
        h(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert noisy(x).tolist() == [1.0, 2.0, 3.0]  # outside a capture: a plain call
        assert ember.compiler.disable(reason="x")(noisy)(x).tolist() == [1.0, 2.0, 3.0]


def test_reset_makes_every_compiled_function_capture_again():
    g = ember.compile(lambda x: x.exp())
    x = ember.ones(2)
    for _ in range(3):
        g(x)
    assert g.stats["captures"] == 1
    ember.compiler.reset()
    for _ in range(3):
        g(x)
    assert g.stats["captures"] == 2 and g.stats["replays"] >= 2


def test_dynamo_cache_size_limit_is_live():
    old = ember._dynamo.config.cache_size_limit
    try:
        ember._dynamo.config.cache_size_limit = 2
        g = ember.compile(lambda x: x * 2)
        with pytest.warns(UserWarning, match="captured 2 times"):
            for n in (1, 2, 3):
                g(ember.ones(n))
        assert g.stats["eager"] >= 1
        with pytest.raises(ValueError):
            ember._dynamo.config.cache_size_limit = 0
    finally:
        ember._dynamo.config.cache_size_limit = old
    ember._dynamo.config.suppress_errors = True  # scripts set it; kept
    ember._dynamo.mark_dynamic(ember.ones(2), 0)


# -- ember.jit ---------------------------------------------------------------------------------------------------


class _Guarded:
    @staticmethod
    def forward(lib, model, x):
        if lib.jit.is_scripting() or lib.jit.is_tracing():
            return model(x) * 0
        return model(x)


def test_script_and_trace_give_the_eager_results_torch_gives():
    torch = pytest.importorskip("torch")
    em, tm = _mlp(ember), _mlp(torch)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for how in ("script", "trace"):
        es = ember.jit.script(em) if how == "script" else ember.jit.trace(em, ember.tensor(x))
        ts = torch.jit.script(tm) if how == "script" else torch.jit.trace(tm, torch.tensor(x))
        np.testing.assert_allclose(es(ember.tensor(x)).detach().numpy(), ts(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
    assert ember.jit.script(em) is em and not ember.jit.is_scripting() and not ember.jit.is_tracing()
    assert _Guarded.forward(ember, em, ember.tensor(x)).abs().sum().item() > 0


def test_trace_runs_the_example_once_and_needs_one():
    calls = []

    def f(x, y):
        calls.append(1)
        return x + y

    assert ember.jit.trace(f, (ember.ones(1), ember.ones(1))) is f and calls == [1]
    with pytest.raises(RuntimeError, match="example_inputs"):
        ember.jit.trace(f)


def test_decorators_futures_and_freeze():
    @ember.jit.ignore
    def a(x):
        return x

    @ember.jit.ignore(drop=True)
    def b(x):
        return x

    @ember.jit.unused
    def c(x):
        return x

    assert a(1) == b(1) == c(1) == 1
    fut = ember.jit.fork(lambda x: x * 2, 21)
    assert ember.jit.wait(fut) == 42 and fut.done()
    m = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="eval"):
        ember.jit.freeze(m)
    assert ember.jit.freeze(m.eval()) is m
    assert not isinstance(m, ember.jit.ScriptModule)
    assert ember.jit.annotate(list, []) == []


def test_save_and_load_refuse_with_the_way_out(tmp_path):
    with pytest.raises(RuntimeError, match=r"no TorchScript.*ember.save\(model.state_dict"):
        ember.jit.save(nn.Linear(2, 2), tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match="no TorchScript"):
        ember.jit.load(tmp_path / "m.pt")


# -- ember.nn.attention, ember.utils.hooks ----------------------------------------------------------------------------


def test_sdpa_kernel_block_as_torch():
    from ember.nn.attention import SDPBackend, current_backends, sdpa_kernel

    torch = pytest.importorskip("torch")
    assert [int(b) for b in SDPBackend] == [int(b) for b in torch.nn.attention.SDPBackend.__members__.values()]
    q = ember.randn(1, 2, 4, 8)
    ref = ember.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    with sdpa_kernel([SDPBackend.MATH]):
        assert current_backends() == (SDPBackend.MATH,)
        assert not torch.backends.cuda.flash_sdp_enabled()  # PyTorch's own switches follow the block
        out = ember.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert torch.backends.cuda.flash_sdp_enabled() and SDPBackend.MATH in current_backends()
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    with pytest.raises(TypeError), sdpa_kernel(["math"]):
        pass


def test_removable_handle_in_pytorchs_form_as_libraries_use_it():
    torch = pytest.importorskip("torch")
    from collections import OrderedDict

    for H in (ember.utils.hooks.RemovableHandle, torch.utils.hooks.RemovableHandle):
        hooks, extra = OrderedDict(), OrderedDict()
        h1, h2 = H(hooks, extra_dict=extra), H(hooks)
        hooks[h1.id], hooks[h2.id], extra[h1.id] = "a", "b", "x"
        assert h1.id != h2.id
        h1.remove()
        assert list(hooks.values()) == ["b"] and not extra
        with h2:
            pass
        assert not hooks
