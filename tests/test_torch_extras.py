"""More of PyTorch's top-level names, each run beside torch: ``cholesky``, ``lu``, ``nonzero_static``,
``index_put_``, ``frombuffer``, ``get_device``, layouts, ``unsafe_split``/``unsafe_chunk``, ``native_*``, the
recurrent cells, warning switches, ``set_flush_denormal``, ``OutOfMemoryError`` and ``torch.cuda``'s queries on a
machine without CUDA."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.testing import check_op

torch = pytest.importorskip("torch")

R = np.random.RandomState(11)
SPD = (lambda a: a @ a.T + 4 * np.eye(4))(R.randn(4, 4))


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def test_cholesky_matches_torch_and_warns_once():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for upper in (False, True):
            check_op(lambda a, u=upper: ember.cholesky((a + a.mT) / 2, upper=u), SPD,
                     torch_fn=lambda a, u=upper: torch.cholesky((a + a.mT) / 2, u), name="cholesky")  # fmt: skip
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.set_warn_always(True)
            lib.cholesky(lib.tensor(SPD))
            lib.cholesky(lib.tensor(SPD))
            lib.set_warn_always(False)
        msgs = [str(w.message) for w in rec if "cholesky is deprecated" in str(w.message)]
        assert len(msgs) == 2, lib.__name__  # warn-always: every call
        assert msgs[0].startswith("torch.cholesky is deprecated in favor of torch.linalg.cholesky")


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5)])
def test_lu_matches_torch_and_unpacks(shape):
    a = R.randn(*shape)
    out = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.set_warn_always(True)
            lu, piv = lib.lu(lib.tensor(a))
            _, _, info = lib.lu(lib.tensor(a), get_infos=True)
            lib.set_warn_always(False)
        assert any(str(w.message).startswith("torch.lu is deprecated in favor of torch.linalg.lu_factor") for w in rec)
        P, L, U = lib.lu_unpack(lu, piv)
        out.append([_np(lu), _np(piv), str(piv.dtype).split(".")[-1], _np(info), tuple(info.shape), _np(P @ L @ U)])
        with pytest.raises(RuntimeError), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.lu(lib.tensor(a), pivot=False)
    t, e = out
    np.testing.assert_allclose(e[0], t[0], atol=1e-12)
    assert np.array_equal(e[1], t[1]) and e[2] == t[2] == "int32"
    assert np.array_equal(e[3], t[3]) and e[4] == t[4]
    np.testing.assert_allclose(e[5], a, atol=1e-12)


@pytest.mark.parametrize(
    ("x", "kw"),
    [([0, 1, 0, 2], {"size": 3}), ([0, 1, 0, 2], {"size": 1}), ([[0, 1], [1, 1]], {"size": 2, "fill_value": -5}),
     ([[0, 1], [1, 1]], {"size": 5, "fill_value": 7}), ([1, 1, 1], {"size": 0}), ([0.0, 0.5], {"size": 2})],
)  # fmt: skip
def test_nonzero_static_matches_torch(x, kw):
    t = torch.nonzero_static(torch.tensor(x), **kw)
    e = ember.nonzero_static(ember.tensor(x), **kw)
    assert e.tolist() == t.tolist() and tuple(e.shape) == tuple(t.shape) and str(e.dtype) == "ember.int64"


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_nonzero_static_refuses_a_negative_size(lib):
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        lib.nonzero_static(lib.tensor([1, 0]), size=-1)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_values_and_gradients_match_torch(accumulate):
    idx = np.array([0, 2, 0]) if accumulate else np.array([3, 0, 2])  # (repeated rows: only when accumulating)
    x, v, vb = R.randn(4, 3), R.randn(3, 3), R.randn(3)

    def fn(lib):
        def run(a, b):
            y = a * 1
            i = lib.tensor(idx)
            lib.index_put_(y, (i,), b, accumulate)  # top level, in place on a result
            return y * 2

        return run

    if accumulate:
        check_op(fn(ember), x, v, torch_fn=fn(torch), name="index_put_")
    check_op(fn(ember), x, vb, torch_fn=fn(torch), name="index_put_ broadcast")  # values broadcast over rows
    z = ember.zeros(3)
    assert ember.index_put_(z, (ember.tensor([1]),), ember.tensor(5.0)) is z and z.tolist() == [0.0, 5.0, 0.0]


def test_frombuffer_matches_torch_and_shares_memory():
    raw = np.arange(6, dtype=np.float32).tobytes()
    for kw in ({}, {"count": 2}, {"offset": 8}, {"count": 3, "offset": 4}):
        t = torch.frombuffer(bytearray(raw), dtype=torch.float32, **kw)
        e = ember.frombuffer(bytearray(raw), dtype=ember.float32, **kw)
        assert e.tolist() == t.tolist() and str(e.dtype) == "ember.float32"
    buf = bytearray(np.array([1, 2], dtype=np.int32).tobytes())
    e = ember.frombuffer(buf, dtype=ember.int32)
    buf[0] = 9
    if ember.zeros(1)._backend.name == "numpy":
        assert e.tolist() == [9, 2]  # the buffer's memory, as PyTorch's
    for lib in (torch, ember):
        with pytest.raises(ValueError):
            lib.frombuffer(bytearray(8), dtype=lib.float32, offset=8)
        with pytest.raises(ValueError):
            lib.frombuffer(bytearray(8), dtype=lib.float32, count=3)
        with pytest.raises(ValueError):
            lib.frombuffer(bytearray(0), dtype=lib.float32)
        assert lib.frombuffer(bytearray(8), dtype=lib.float32, requires_grad=True).requires_grad
    bits = bytearray(b"\x80\x3f\x00\x40\xc0\xbf")  # bfloat16 1, 2, -1.5 (safetensors' loader reads BF16 so)
    got = [lib.frombuffer(bits, dtype=lib.bfloat16, offset=2) for lib in (ember, torch)]
    assert got[0].float().tolist() == got[1].float().tolist() == [2.0, -1.5] and str(got[0].dtype) == "ember.bfloat16"


def _storages(lib):
    x = lib.arange(10.0)
    v = x[2:5]
    s, sv = x.untyped_storage(), v.untyped_storage()
    meta = lib.empty(3, device="meta").untyped_storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch: TypedStorage is deprecated)
        typed = x.storage()
        sizes = [typed.size(), typed.element_size(), len(typed), typed.data_ptr() == s.data_ptr()]
    return [
        sv.data_ptr() == s.data_ptr(), s.nbytes(), sv.nbytes(), v.data_ptr() - sv.data_ptr(), len(s), s.size(),
        s.element_size(), x.reshape(2, 5).t().untyped_storage().data_ptr() == s.data_ptr(),
        lib.ones(2).untyped_storage().data_ptr() != s.data_ptr(), isinstance(s, lib.UntypedStorage),
        meta.nbytes(), meta.data_ptr(), *sizes,
    ]  # fmt: skip


def test_storages_describe_the_memory_a_tensor_views_as_torch():
    """``untyped_storage()``: what safetensors and Hugging Face read to find tensors sharing memory."""
    assert _storages(ember) == _storages(torch)


def test_device_layout_and_unsafe_split_match_torch():
    with torch.device(ember.get_default_device().type):  # on Ember's default device: -1 on the CPU, 0 on cuda:0
        tx = torch.arange(10.0)
    for lib, x in ((torch, tx), (ember, ember.arange(10.0))):
        assert lib.get_device(x) == x.get_device() == tx.get_device()
        assert x.layout is lib.strided and isinstance(lib.strided, lib.layout)
        assert [p.tolist() for p in lib.unsafe_split(x, 3)] == [p.tolist() for p in torch.arange(10.0).split(3)]
        assert [p.tolist() for p in lib.unsafe_chunk(x, 4)] == [p.tolist() for p in torch.arange(10.0).chunk(4)]
    assert repr(ember.strided) == "ember.strided"
    assert ember.sparse_coo_tensor(ember.tensor([[0]]), ember.tensor([1.0]), (2,)).layout is ember.sparse_coo


def test_native_layer_norm_matches_torch():
    x, w, b = R.randn(2, 3, 4), R.randn(4), R.randn(4)

    def fn(lib):
        return lambda a, ww, bb: lib.native_layer_norm(a, [4], ww, bb, 1e-5)

    check_op(fn(ember), x, w, b, torch_fn=fn(torch), name="native_layer_norm")
    e = ember.native_layer_norm(ember.tensor(x, requires_grad=True), [3, 4], None, None, 1e-5)
    assert [t.requires_grad for t in e] == [True, False, False] and tuple(e[1].shape) == (2, 1, 1)


def test_native_batch_norm_matches_torch():
    x, w, b = R.randn(5, 3, 2), R.randn(3), R.randn(3)

    def fn(lib):
        return lambda a, ww, bb: lib.native_batch_norm(a, ww, bb, None, None, True, 0.1, 1e-5)

    check_op(fn(ember), x, w, b, torch_fn=fn(torch), name="native_batch_norm")
    stats = []
    for lib in (torch, ember):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        out = lib.native_batch_norm(lib.tensor(x), None, None, rm, rv, True, 0.1, 1e-5)
        ev = lib.native_batch_norm(lib.tensor(x), None, None, rm, rv, False, 0.1, 1e-5)
        stats.append([_np(rm), _np(rv), _np(out[1]), _np(ev[0]), tuple(ev[1].shape), tuple(ev[2].shape)])
    for a, c in zip(*stats, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), atol=1e-12)


def test_native_dropout_as_torch():
    for lib in (torch, ember):
        x = lib.ones(2000, requires_grad=True)
        out, mask = lib.native_dropout(x, 0.3, True)
        assert str(mask.dtype).endswith("bool") and out.requires_grad and not mask.requires_grad
        m = _np(mask)
        assert 0.6 < m.mean() < 0.8
        np.testing.assert_allclose(_np(out), m / 0.7, rtol=1e-6)
        out, mask = lib.native_dropout(x, 0.5, False)
        assert out is not x and _np(mask).all() and np.array_equal(_np(out), _np(x))
        out, mask = lib.native_dropout(x, 1.0, True)
        assert not _np(mask).any() and not _np(out).any()


CELL_ARGS = {
    "lstm_cell": (
        R.randn(2, 3),
        R.randn(2, 4),
        R.randn(2, 4),
        R.randn(16, 3),
        R.randn(16, 4),
        R.randn(16),
        R.randn(16),
    ),
    "gru_cell": (R.randn(2, 3), R.randn(2, 4), R.randn(12, 3), R.randn(12, 4), R.randn(12), R.randn(12)),
    "rnn_tanh_cell": (R.randn(2, 3), R.randn(2, 4), R.randn(4, 3), R.randn(4, 4), R.randn(4), R.randn(4)),
    "rnn_relu_cell": (R.randn(2, 3), R.randn(2, 4), R.randn(4, 3), R.randn(4, 4), R.randn(4), R.randn(4)),
}


@pytest.mark.parametrize("name", list(CELL_ARGS))
def test_recurrent_cells_match_torch(name):
    def fn(lib):
        f = getattr(lib, name)
        if name == "lstm_cell":
            return lambda x, h, c, *w: f(x, (h, c), *w)
        return f

    check_op(fn(ember), *CELL_ARGS[name], torch_fn=fn(torch), name=name)
    if name == "lstm_cell":
        for lib in (torch, ember):
            with pytest.raises(TypeError, match="must be tuple of Tensors"):
                lib.lstm_cell(lib.ones(2, 3), lib.ones(2, 4), lib.ones(16, 3), lib.ones(16, 4))


def test_warn_always_switch_and_flush_denormal():
    for lib in (torch, ember):
        assert lib.is_warn_always_enabled() is False
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled() is True
        lib.set_warn_always(False)
        assert lib.set_flush_denormal(False) is True
    got = ember.set_flush_denormal(True)
    if ember.backends.current("cpu") == "torch":  # (a CPU setting: the CPU's backend, whatever the default device)
        assert got is torch.set_flush_denormal(True)
    else:
        assert got is False  # NumPy cannot flush denormals: it says so (PyTorch on x86 says True)
    ember.set_flush_denormal(False)
    torch.set_flush_denormal(False)


def test_out_of_memory_error_is_torchs_kind():
    for lib in (torch, ember):
        assert issubclass(lib.OutOfMemoryError, RuntimeError)
        assert lib.cuda.OutOfMemoryError is lib.OutOfMemoryError
    assert issubclass(ember.OutOfMemoryError, MemoryError)


QUERIES = {
    "get_device_properties": (0,), "get_device_capability": (), "seed": (), "seed_all": (), "initial_seed": (),
    "get_rng_state": (), "get_rng_state_all": (), "set_rng_state": ("state",), "set_rng_state_all": ([],),
    "memory_stats": (),
}  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available() or ember.cuda.is_available(), reason="the answers without CUDA")
@pytest.mark.parametrize("name", list(QUERIES))
def test_cuda_queries_without_cuda_answer_as_torchs_cpu_build(name):
    def answer(lib):
        args = tuple(lib.zeros(4, dtype=lib.uint8) if a == "state" else a for a in QUERIES[name])
        try:
            r = getattr(lib.cuda, name)(*args)
        except Exception as e:
            return "raises", type(e)
        return "returns", r

    t, e = answer(torch), answer(ember)
    assert t[0] == e[0] and (t[1] is e[1] if t[0] == "raises" else t[1] == e[1] and type(t[1]) is type(e[1]))
