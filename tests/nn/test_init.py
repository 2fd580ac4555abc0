"""nn.init: values drawn by the parameter's backend on its device, seeded, with the right distributions."""

import math

import numpy as np
import pytest

import ember
import ember.nn.init as init
from ember import backends

INITS = {
    "uniform_": lambda t: init.uniform_(t, -0.5, 2.0),
    "normal_": lambda t: init.normal_(t, 1.0, 0.5),
    "trunc_normal_": lambda t: init.trunc_normal_(t, 0.5, 1.0, -0.5, 1.0),
    "xavier_uniform_": init.xavier_uniform_,
    "xavier_normal_": init.xavier_normal_,
    "kaiming_uniform_": init.kaiming_uniform_,
    "kaiming_normal_": init.kaiming_normal_,
    "orthogonal_": init.orthogonal_,
}


def _stats(a):
    a = np.asarray(a, dtype=np.float64).ravel()
    return a.min(), a.max(), a.mean(), a.std()


def test_distributions_have_the_right_range_mean_and_spread():
    ember.manual_seed(0)
    t = ember.empty(200, 300)
    lo, hi, mean, std = _stats(init.uniform_(t, -0.5, 2.0).numpy())
    assert -0.5 <= lo < -0.49 and 1.99 < hi < 2.0 and abs(mean - 0.75) < 0.01 and abs(std - 2.5 / math.sqrt(12)) < 0.01
    _, _, mean, std = _stats(init.normal_(t, 1.0, 0.5).numpy())
    assert abs(mean - 1.0) < 0.01 and abs(std - 0.5) < 0.01
    lo, hi, mean, std = _stats(init.trunc_normal_(t, 0.5, 1.0, -0.5, 1.0).numpy())
    # N(0.5, 1) on [-0.5, 1]: alpha = -1, beta = 0.5; mean = mu + (phi(a) - phi(b)) / Z * sigma
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))
    z = cdf(0.5) - cdf(-1.0)
    assert -0.5 <= lo < -0.49 and 0.99 < hi <= 1.0 and abs(mean - (0.5 + (phi(-1.0) - phi(0.5)) / z)) < 0.01
    fan_in, fan_out = 300, 200
    _, _, _, std = _stats(init.kaiming_normal_(t, nonlinearity="relu").numpy())
    assert abs(std - math.sqrt(2 / fan_in)) < 0.002
    lo, hi, _, _ = _stats(init.xavier_uniform_(t).numpy())
    bound = math.sqrt(6 / (fan_in + fan_out))
    assert -bound <= lo < -0.99 * bound and 0.99 * bound < hi <= bound


def test_trunc_normal_far_in_a_tail_stays_in_bounds_without_hanging():
    t = init.trunc_normal_(ember.empty(1000, dtype=ember.float64), 0.0, 1.0, 8.0, 9.0)
    assert t.min().item() >= 8.0 and t.max().item() <= 9.0 and t.mean().item() < 8.3


@pytest.mark.parametrize("shape", [(6, 6), (4, 9), (9, 4), (8, 3, 2, 2)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    w = init.orthogonal_(ember.empty(*shape, dtype=ember.float64), gain=2.0).numpy().reshape(shape[0], -1)
    small = min(w.shape)
    gram = w @ w.T if w.shape[0] == small else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-12)


def test_constant_eye_dirac():
    assert init.constant_(ember.empty(2, 3), 1.5).tolist() == [[1.5] * 3] * 2
    assert init.eye_(ember.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    w = init.dirac_(ember.empty(4, 2, 3, 3), groups=2)
    x = ember.randn(1, 4, 5, 5)
    y = ember.nn.functional.conv2d(x, w, padding=1, groups=2)
    np.testing.assert_allclose(y.numpy()[:, [0, 2]], x.numpy()[:, [0, 2]], rtol=1e-6)
    with pytest.raises(ValueError, match="dirac_"):
        init.dirac_(ember.empty(3, 3))


def test_skip_init_leaves_tensors_alone_and_initializers_bump_the_version():
    t = ember.zeros(3, 3)
    with init.skip_init():
        for fn in INITS.values():
            fn(t)
    assert t.tolist() == [[0.0] * 3] * 3
    v = t._vc[0]
    init.normal_(t)
    assert t._vc[0] == v + 1


@pytest.mark.parametrize("name", list(INITS))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_same_seed_same_values_per_backend(name, backend):
    if backend == "torch":
        pytest.importorskip("torch")
    with backends.use(backend), ember.device("cpu"):  # the CPU backends' streams (make test-cuda's default: cuda)
        draws = []
        for seed in (5, 5, 6):
            ember.manual_seed(seed)
            t = INITS[name](ember.empty(6, 5, dtype=ember.float32))
            assert t._backend.name == backend and t.dtype is ember.float32
            draws.append(t.tolist())
    assert draws[0] == draws[1] != draws[2]
    with backends.use(backend), ember.device("cpu"):  # consecutive draws differ; a same-seed generator repeats them
        assert INITS[name](ember.empty(4, 4)).tolist() != INITS[name](ember.empty(4, 4)).tolist()
        a = init.normal_(ember.empty(3), generator=ember.Generator().manual_seed(9)).tolist()
        b = init.normal_(ember.empty(3), generator=ember.Generator().manual_seed(9)).tolist()
    assert a == b


@pytest.mark.parametrize("name", list(INITS))
def test_torch_parameters_are_initialised_on_the_device_without_numpy(name, monkeypatch):
    """No host draw and copy: the torch backend never receives a NumPy array, and NumPy draws nothing."""
    torch = pytest.importorskip("torch")
    be = backends.get("torch")
    with backends.use("torch"):
        t = ember.empty(6, 5, dtype=ember.bfloat16)

    def refuse(*a, **k):
        raise AssertionError("a host array was copied to the device")

    monkeypatch.setattr(be, "from_numpy", refuse)
    monkeypatch.setattr(be, "asarray", refuse)

    class OnlySeeds:
        """The NumPy generator only hands seeds to torch's generator; drawing samples from it fails."""

        def integers(self, *a, **k):
            return np.random.default_rng(1).integers(*a, **k)

        def __getattr__(self, name):
            raise AssertionError(f"NumPy drew samples ({name})")

    monkeypatch.setattr(ember.default_generator, "_rng", OnlySeeds())
    out = INITS[name](t)
    assert out is t and isinstance(t._data, torch.Tensor) and t._data.dtype == torch.bfloat16
    assert bool(torch.isfinite(t._data).all()) and float(t._data.float().std()) > 0
