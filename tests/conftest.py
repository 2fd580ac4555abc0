"""Shared test fixtures: seeding, and a ``torch`` fixture that skips when PyTorch is absent.

Every test starts from seeds that depend only on its own name, never on the tests run before it.
``EMBER_TEST_SEED=N`` (default 0) shifts them all: run the suite with a few values to find a test that
passes only by luck of its random draws.

``EMBER_TEST_MIXED=1`` (or ``pytest --mixed-backends``) is the mixed-backend run: the tests' CPU tensors and
modules are served by torch while NumPy stays the process default that Ember's own code sees, so a tensor
Ember creates mid-computation without the device of its inputs meets a mixed-backend error (on a GPU it
would land on the host). See ``_mixed_select`` for which code counts as the test's.

Two runs check the accelerator's code paths without a GPU (``make test-accel``; docs/architecture.md):
``EMBER_TEST_ACCEL=1`` (or ``--accelerator-paths``), with ``EMBER_BACKEND=torch``, runs torch's CPU backend as an
accelerator (``cheap_sync`` off: no host checks or host-side branches, as on CUDA); ``EMBER_TEST_FAKE_DEVICE=1``
(or ``--fake-device``) makes torch-CPU the default device while ``"cpu"`` and ``from_numpy`` give NumPy's CPU, as
on a GPU machine the default is cuda while ``from_numpy`` gives the host, so a tensor made on the wrong one of
the two meets a mixed-backend error. The accelerator-path run also fails any test in which Ember hands one of
torch's indexing functions an out-of-range index (``tests/_device_asserts.py``): on CUDA a device-side assert
that leaves the process's CUDA context unusable, on the CPU an error a test may well accept.
"""

from __future__ import annotations

import math
import os
import random
import sys
import zlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import settings

import ember

# Property tests draw the same examples on every run (a CI failure reproduces; nothing fails at random),
# with no time limit per example (the machine may be busy) and no example database on disk.
settings.register_profile("ember", derandomize=True, deadline=None, database=None)
settings.load_profile("ember")

_SHIFT = int(os.environ.get("EMBER_TEST_SEED", "0"))

# Ember modules whose frames act on behalf of their caller when they resolve a device (the factories, the
# tensor constructor and ``.to``, ``Module.to``): the caller decides whose device it is.
_PLUMBING = ("ember._creation", "ember._convert", "ember._param", "ember._tensor", "ember._device", "ember._legacy",
             "ember.backends", "ember._copy", "ember.nn.module", "ember.nn.parameter",
             "ember.ops._spectral_windows", "ember._factory")  # fmt: skip
# Tensor.to's device lookup (in ember.ops) and the public factories outside ``_creation``
_PLUMBING_FUNCTIONS = frozenset(
    {"_to_device", "tril_indices", "triu_indices", "logspace", "sparse_coo_tensor", "generate_square_subsequent_mask"}
)


def _mixed_select(d: ember.device) -> str | None:
    """The mixed run's backend for a device given without one: torch for the tests, NumPy for Ember's code.

    The calling frames decide, nearest first, skipping the plumbing: test code (anything outside ``ember``,
    and ``ember.testing``) gets torch when no Ember frame came before it; Ember code running inside a
    module's constructor (a layer's parameters and buffers, a loaded model's weights: placed as
    ``with ember.device(...)`` would place them) gets torch too; any other Ember code gets the process
    default, NumPy.
    """
    if d.type != "cpu" or _CHOSEN[0]:
        return None
    from ember.nn import Module

    f = sys._getframe(2)
    in_ember = False
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not mod.startswith("ember") or mod == "ember.testing":
            return None if in_ember else "torch"
        if not mod.startswith(_PLUMBING) and f.f_code.co_name not in _PLUMBING_FUNCTIONS:
            if f.f_code.co_name == "__init__" and isinstance(f.f_locals.get("self"), Module):
                return "torch"
            in_ember = True
        f = f.f_back  # type: ignore[assignment]
    return None


_CHOSEN = [False]  # a test chose a backend with ``ember.backends.use``: the mixed run then stands aside


def _track_use() -> None:
    """Make ``backends.use`` (a call or a block) switch the mixed run's redirection off, as a test asks."""
    backends = ember.backends
    original = backends.use
    exit_ = backends._Use.__exit__

    def use(name: str) -> ember.backends._Use:
        u = original(name)
        u._was_chosen = _CHOSEN[0]  # type: ignore[attr-defined]
        _CHOSEN[0] = True
        return u

    def __exit__(self: ember.backends._Use, *exc: object) -> None:  # noqa: N807
        exit_(self, *exc)
        _CHOSEN[0] = getattr(self, "_was_chosen", False)

    backends.use = use  # type: ignore[assignment]
    backends._Use.__exit__ = __exit__  # type: ignore[method-assign]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--mixed-backends", action="store_true", help="the mixed-backend run (see EMBER_TEST_MIXED)")
    parser.addoption("--accelerator-paths", action="store_true", help="torch-CPU as an accelerator (EMBER_TEST_ACCEL)")
    parser.addoption("--fake-device", action="store_true", help="torch-CPU as default (EMBER_TEST_FAKE_DEVICE)")


def _switch(config: pytest.Config, option: str, env: str) -> bool:
    """Whether a run given by a command-line option or an environment variable is on (workers inherit it)."""
    if config.getoption(option) or os.environ.get(env, "") not in ("", "0"):
        os.environ[env] = "1"
        return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("EMBER_DEVICE", "").startswith("cuda"):  # make test-cuda: parity tolerances need full float32
        ember.backends.cudnn.allow_tf32 = False
        ember.backends.cuda.matmul.allow_tf32 = False
    if _switch(config, "--mixed-backends", "EMBER_TEST_MIXED"):
        pytest.importorskip("torch", reason="the mixed-backend run needs torch")
        ember.backends.select_hook = _mixed_select
        _track_use()
    if _switch(config, "--accelerator-paths", "EMBER_TEST_ACCEL"):
        pytest.importorskip("torch", reason="the accelerator-path run needs torch")
        _ACCEL[0] = True
        _DETECTOR[0] = _load_detector()
    if _switch(config, "--fake-device", "EMBER_TEST_FAKE_DEVICE"):
        pytest.importorskip("torch", reason="the fake-device run needs torch")
        _FAKE[0] = True
        ember.set_default_device(ember.backends.get("torch").device)  # (test modules read it as they are collected)


_ACCEL = [False]
_FAKE = [False]
_DETECTOR: list = [None]  # the accelerator-path run's DeviceAssertDetector (tests/_device_asserts.py)


def _load_detector() -> object:
    """tests/_device_asserts.py's detector (the tests are no package: loaded from its file)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("_device_asserts", Path(__file__).with_name("_device_asserts.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.DeviceAssertDetector()


def _device_asserts_found() -> None:
    """Fail the test where the detector saw an index that would fire a device-side assert on CUDA (whether or
    not the test caught the error raised there)."""
    detector = _DETECTOR[0]
    if detector is not None and detector.found:
        found, detector.found[:] = list(dict.fromkeys(detector.found)), []
        raise pytest.fail.Exception("device-side assert on CUDA:\n  " + "\n  ".join(found), pytrace=False) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        _device_asserts_found()


@pytest.fixture(autouse=True)
def _accelerator_paths() -> Iterator[None]:
    """The accelerator-path run: torch's CPU backend takes the accelerator's paths; the fake-device run: torch-CPU
    is the default device. Set again before each test (a test may change either and put back the usual one)."""
    if _FAKE[0]:
        ember.set_default_device(ember.backends.get("torch").device)
    if not _ACCEL[0]:
        yield
        return
    be = ember.backends.get("torch")
    old, be._cheap_sync = be._cheap_sync, False
    try:
        with _DETECTOR[0]:  # type: ignore[attr-defined]
            yield
    finally:
        be._cheap_sync = old
    _device_asserts_found()  # in a fixture's setup or teardown


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if all(os.environ.get(v, "") in ("", "0") for v in ("EMBER_TEST_MIXED", "EMBER_TEST_FAKE_DEVICE")):
        return
    skip = pytest.mark.skip(reason="checks the process default backend, which the mixed-backend and fake-device runs "
                            "split")  # fmt: skip
    for item in items:
        if item.get_closest_marker("process_default"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _seed(request: pytest.FixtureRequest) -> None:
    """Every test starts from the same random state, whatever ran before it (order, xdist worker)."""
    module = request.module
    if isinstance(getattr(module, "rng", None), np.random.Generator):  # a test file's shared `rng`: per test
        module.rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()) + _SHIFT)
    _CHOSEN[0] = False
    ember.manual_seed(_SHIFT)
    np.random.seed(_SHIFT)
    random.seed(_SHIFT)
    if "torch" in sys.modules:  # torch's generator too, once some test has imported it
        sys.modules["torch"].manual_seed(_SHIFT)


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(_SHIFT)
    return torch


def _expected_keep(like: ember.Tensor, shape: tuple[int, ...], p: float) -> ember.Tensor:
    """Dropout's keep mask as documented, drawn here without the kernel: on torch ``rand(shape) >= p`` from a torch
    generator seeded by Ember's; elsewhere the default generator's next ``ceil(n / 2)`` raw 64-bit outputs, each two
    32-bit draws (low half first), kept where a draw is at least ``ceil(p * 2**32)``."""
    be, gen = like._backend, ember.default_generator.numpy
    if be.name == "torch":
        return ember.Tensor._make(be.uniform(gen, shape, like.dtype) >= p, be)
    n = int(np.prod(shape))
    draws = gen.bit_generator.random_raw(-(-n // 2)).view(np.uint32)[:n]
    keep = draws.astype(np.int64) >= math.ceil(p * 2**32)
    return ember.Tensor._make(be.from_numpy(keep.reshape(shape)), be)


@pytest.fixture
def expected_keep():
    """``expected_keep(like, shape, p)``: the dropout mask Ember's kernels must draw (see ``_expected_keep``)."""
    return _expected_keep
