"""``TransformerEncoder`` in inference with a key padding mask gives PyTorch's zeros at padded positions (its
nested-tensor path) exactly where PyTorch takes that path, and the computed values elsewhere: beside torch."""

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LEFT = [[False, False, True, True], [False, False, False, False]]  # padding at the end of each sequence
RAGGED = [[False, True, False, True], [False, False, False, False]]  # not left aligned: PyTorch computes them


def _pair(batch_first=True, norm_first=False, nhead=2, norm=True, enable=True):
    out = []
    for lib in (torch, ember):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer = lib.nn.TransformerEncoderLayer(8, nhead, 16, dropout=0.0, batch_first=batch_first,
                                                   norm_first=norm_first).double()  # fmt: skip
            enc = lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(8).double() if norm else None,
                                            enable_nested_tensor=enable).double()  # fmt: skip
        out.append(enc)
    rng = np.random.default_rng(0)
    state = {k: rng.standard_normal(tuple(v.shape)) * 0.3 for k, v in out[0].state_dict().items()}
    out[0].load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    out[1].load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    return out


CASES = {
    "eval_no_grad": dict(),
    "eval_grad": dict(grad=True),
    "train": dict(train=True),
    "float_mask": dict(float_mask=True),
    "ragged": dict(kpm=RAGGED),
    "with_mask": dict(mask=True),
    "seq_first": dict(build=dict(batch_first=False)),
    "norm_first": dict(build=dict(norm_first=True)),
    "odd_heads": dict(build=dict(nhead=1)),
    "no_norm": dict(build=dict(norm=False)),
    "disabled": dict(build=dict(enable=False)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_padded_outputs_as_torch(name):
    if torch._C._is_torch_function_mode_enabled():  # (the accelerator-path run's detector: PyTorch then takes
        pytest.skip("a torch function mode is on: PyTorch's nested-tensor path is off under it")  # no fast path)
    case = CASES[name]
    build = case.get("build", {})
    tenc, eenc = _pair(**build)
    x = np.random.default_rng(1).standard_normal((2, 4, 8))
    if not build.get("batch_first", True):
        x = x.transpose(1, 0, 2).copy()
    kpm = np.array(case.get("kpm", LEFT))
    results = []
    for lib, enc in ((torch, tenc), (ember, eenc)):
        enc.train(case.get("train", False))
        mask = lib.tensor(kpm)
        if case.get("float_mask"):
            mask = lib.zeros(2, 4, dtype=lib.float64).masked_fill(mask, float("-inf"))
        attn = lib.nn.Transformer.generate_square_subsequent_mask(4).double() if case.get("mask") else None
        with lib.set_grad_enabled(case.get("grad", False)):
            results.append(enc(lib.tensor(x), mask=attn, src_key_padding_mask=mask).detach().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-9, atol=1e-12)
    if name == "eval_no_grad":  # (the case this is about: zeros, then the final norm's bias)
        assert np.allclose(results[1][0, 2:], eenc.norm.bias.detach().numpy())


def test_a_compiled_encoder_zeroes_the_same_positions_without_a_host_read():
    _, enc = _pair()
    enc.eval()
    x = ember.tensor(np.random.default_rng(2).standard_normal((2, 4, 8)))
    step = ember.compile(lambda a, m: enc(a, src_key_padding_mask=m), fullgraph=True)  # (a host read would raise)
    with ember.no_grad():
        for kpm in (LEFT, RAGGED, LEFT):
            m = ember.tensor(kpm)
            np.testing.assert_array_equal(step(x, m).numpy(), enc(x, src_key_padding_mask=m).numpy())


def test_a_masked_encoder_on_an_accelerator_uploads_nothing_from_the_host(monkeypatch):
    """On an accelerator a Python float made a tensor (attention's ``where(mask, -inf, 0.0)``) is filled on the
    device: an upload from host memory at each call is a copy a CUDA graph cannot capture (the compiled encoder got
    no graph on the H200). Checked on torch-CPU taking the accelerator's path; the values are torch's."""
    be = ember.backends.get("torch")
    monkeypatch.setattr(be, "_cheap_sync", False)
    with ember.backends.use("torch"):
        tenc, enc = _pair()
        enc.eval()
        tenc.eval()
        x = np.random.default_rng(2).standard_normal((2, 4, 8))
        xs, m = ember.tensor(x), ember.tensor(RAGGED)
        uploads = []
        for name in ("asarray", "from_numpy"):
            f = getattr(be, name)
            monkeypatch.setattr(be, name, lambda *a, _f=f, **k: uploads.append(a[0]) or _f(*a, **k))
        with ember.no_grad():
            out = enc(xs, src_key_padding_mask=m)
        monkeypatch.undo()
        assert uploads == []
        with torch.no_grad():
            want = tenc(torch.tensor(x), src_key_padding_mask=torch.tensor(RAGGED))
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
        for v, dt in ((-math.inf, ember.float32), (0.1, ember.float32), (0.1, ember.float64), (1e300, ember.float32),
                      (0.1, ember.complex64)):  # fmt: skip
            monkeypatch.setattr(be, "_cheap_sync", False)
            t = ember.tensor(v, dtype=dt)
            monkeypatch.undo()
            assert torch.equal(t._data, torch.tensor(v, dtype=getattr(torch, dt.name))), (v, dt)
