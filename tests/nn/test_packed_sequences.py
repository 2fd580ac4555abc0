"""``ember.nn.utils.rnn`` and the recurrent layers on packed batches, run the same way under PyTorch: padding,
packing and unpacking, and LSTM/GRU/RNN outputs, final states and gradients on sequences of unequal lengths."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

R = np.random.RandomState(0)
SEQS = [R.randn(n, 3) for n in (2, 5, 3, 5, 1)]
LENGTHS = [len(s) for s in SEQS]


def _rnnu(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.rnn")


def _layer(lib, mode, **kw):
    m = getattr(lib.nn, mode)(3, 4, **kw).double()
    for i, p in enumerate(m.parameters()):
        with lib.no_grad():
            p.copy_(lib.tensor(np.sin(np.arange(p.numel()) * 0.37 + i).reshape(tuple(p.shape))))
    return m


def _run(lib, mode, batch_first, sort, with_hx, **kw):
    u = _rnnu(lib)
    seqs = [lib.tensor(s, requires_grad=True) for s in SEQS]
    order = sorted(range(len(SEQS)), key=lambda i: -LENGTHS[i]) if sort else range(len(SEQS))
    chosen = [seqs[i] for i in order]
    padded = u.pad_sequence(chosen, batch_first=batch_first)
    packed = u.pack_padded_sequence(padded, [LENGTHS[i] for i in order], batch_first=batch_first, enforce_sorted=sort)
    m = _layer(lib, mode, batch_first=batch_first, **kw)
    hx = None
    if with_hx:
        dirs = 2 if kw.get("bidirectional") else 1
        size = kw.get("proj_size") or 4
        h0 = lib.tensor(np.cos(np.arange(kw.get("num_layers", 1) * dirs * 5 * size)).reshape(-1, 5, size) * 0.5)
        hx = (h0, lib.tensor(np.cos(np.arange(h0.shape[0] * 5 * 4)).reshape(-1, 5, 4))) if mode == "LSTM" else h0
    out, h = m(packed, hx)
    o, lens = u.pad_packed_sequence(out, batch_first=batch_first, total_length=6)
    hs = h if isinstance(h, tuple) else (h,)
    (o * o).sum().backward(retain_graph=True)
    sum((x * x * 0.5).sum() for x in hs).backward()
    return (
        [out.data.detach().numpy(), out.batch_sizes.numpy(), o.detach().numpy(), lens.numpy()]
        + [x.detach().numpy() for x in hs]
        + [s.grad.numpy() for s in seqs]
        + [p.grad.numpy() for p in m.parameters()]
    )


CONFIGS = [
    ("LSTM", False, False, False, {}),
    ("LSTM", True, False, True, {"num_layers": 2, "bidirectional": True}),
    ("LSTM", False, True, True, {"proj_size": 2}),
    ("GRU", True, True, False, {"num_layers": 2}),
    ("GRU", False, False, True, {"bidirectional": True}),
    ("RNN", False, False, False, {"nonlinearity": "relu", "bidirectional": True}),
]


@pytest.mark.parametrize(("mode", "batch_first", "sort", "with_hx", "kw"), CONFIGS)
def test_recurrent_layers_on_packed_batches_match_torch(mode, batch_first, sort, with_hx, kw):
    got, want = _run(ember, mode, batch_first, sort, with_hx, **kw), _run(torch, mode, batch_first, sort, with_hx, **kw)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, k
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"item {k}")


def _utilities(lib):
    u = _rnnu(lib)
    seqs = [lib.tensor(s) for s in SEQS]
    packed = u.pack_sequence(seqs, enforce_sorted=False)
    left = u.pad_sequence(seqs, batch_first=True, padding_value=-1.0, padding_side="left")
    padded, lens = u.pad_packed_sequence(packed, padding_value=9.0)
    return {
        "packed": (
            packed.data.numpy(),
            packed.batch_sizes.tolist(),
            packed.sorted_indices.tolist(),
            packed.unsorted_indices.tolist(),
        ),
        "left": left.numpy(),
        "padded": (padded.numpy(), lens.tolist()),
        "unpacked": [s.numpy() for s in u.unpack_sequence(packed)],
        "unpadded": [s.numpy() for s in u.unpad_sequence(left.flip(1), lib.tensor(LENGTHS), batch_first=True)],
        "sorted": u.pack_padded_sequence(
            u.pad_sequence(sorted(seqs, key=lambda s: -s.shape[0])), sorted(LENGTHS)[::-1]
        ).sorted_indices,
        "double": str(packed.to(lib.float32).data.dtype).split(".")[-1],
    }


def _same(got, want, key):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), key
        for g, w in zip(got, want, strict=True):
            _same(g, w, key)
    elif want is None or isinstance(want, str):
        assert got == want, key
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=key)


def test_padding_and_packing_utilities_match_torch():
    got, want = _utilities(ember), _utilities(torch)
    assert got.keys() == want.keys()
    for key in got:
        _same(got[key], want[key], key)


def test_packing_refuses_what_torch_refuses():
    u = _rnnu(ember)
    x = ember.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        u.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(ValueError, match="lengths"):
        u.pack_padded_sequence(x, [5, 4, 1])
    with pytest.raises(ValueError, match="total_length"):
        u.pad_packed_sequence(u.pack_padded_sequence(x, [4, 2, 1]), total_length=3)
