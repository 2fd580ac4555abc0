"""The default device (set_default_device, ``with ember.device(...)``, EMBER_DEVICE), and Ember code that
creates tensors mid-computation putting them next to its inputs when those live on another backend."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import backends


@pytest.fixture
def other():
    """A CPU device served by the backend that is NOT the process default (torch when NumPy is, and back)."""
    pytest.importorskip("torch")
    name = "numpy" if backends.current() == "torch" else "torch"
    before = ember.get_default_device()
    yield backends.get(name).device
    ember.set_default_device(before)  # the process default again (make test-cuda: cuda)


@pytest.mark.process_default
def test_set_default_device_places_factories_layers_and_tensor(other):
    assert ember.get_default_device().type == (os.environ.get("EMBER_DEVICE") or "cpu").split(":")[0]
    ember.set_default_device(other)
    assert ember.get_default_device().backend == other.backend
    made = [ember.zeros(2), ember.randn(2), ember.tensor([1.0]), ember.arange(3), nn.Linear(2, 3).weight]
    assert {t._backend.name for t in made} == {other.backend}
    ember.set_default_device("cpu")  # back to the process default
    assert ember.zeros(1)._backend.name == backends.current() and ember.get_default_device() == "cpu"


@pytest.mark.process_default
def test_with_device_is_a_block_and_per_thread(other):
    # the backend of the process default device (cupy under EMBER_DEVICE=cuda on cupy); not backends.current(),
    # which names the CPU's (numpy beside cupy)
    default = ember.zeros(1)._backend.name
    seen = {}

    def worker():
        seen["thread"] = ember.zeros(1)._backend.name

    with other:
        assert ember.ones(2)._backend.name == other.backend
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        with ember.device(backends.get(default).device):  # nested blocks: the innermost wins
            assert ember.ones(1)._backend.name == default
        assert ember.get_default_device().backend == other.backend
    assert seen["thread"] == default  # another thread keeps the process default
    assert ember.ones(1)._backend.name == default


def test_a_device_that_is_not_here_is_refused_with_what_is():
    if ember.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match=r"cuda:0 is not available.*Available here: numpy \(cpu\)"):
        ember.set_default_device("cuda")
    with pytest.raises(ValueError, match="not available"), ember.device("cuda"):
        pass
    assert ember.get_default_device() == "cpu"
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        ember.set_default_device("tpu")


def test_ember_device_at_import_sets_the_process_default():
    pytest.importorskip("torch")
    code = "import ember; print(ember.get_default_device(), ember.zeros(1).device)"
    env = {**os.environ, "EMBER_DEVICE": "cpu", "EMBER_BACKEND": "torch"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["cpu", "cpu"]
    if not ember.cuda.is_available():
        env["EMBER_DEVICE"] = "cuda"
        bad = subprocess.run([sys.executable, "-c", "import ember"], env=env, capture_output=True, text=True)
        assert bad.returncode != 0 and "cuda:0 is not available" in bad.stderr


# -- Ember's own tensors go where the inputs are (the bug class the mixed-backend run catches) --------------
def test_causal_attention_on_a_non_default_backend(other):
    mha = nn.MultiheadAttention(8, 2).to(other)
    x = ember.randn(5, 2, 8, device=other)
    out, _ = mha(x, x, x, is_causal=True, need_weights=False)
    assert out._backend.name == other.backend
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).to(other)
    mask = nn.Transformer.generate_square_subsequent_mask(5, device=other)
    assert layer(x, src_mask=mask, is_causal=True)._backend.name == other.backend


def test_gradcheck_on_a_non_default_backend(other):
    x = ember.randn(3, 2, dtype=ember.float64, device=other, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: (t * t).tanh(), (x,))
    assert ember.autograd.gradgradcheck(lambda t: (t * t).tanh(), (x,))


def test_gradient_given_on_another_backend_is_refused_clearly(other):
    x = ember.ones(2, device=other, requires_grad=True)
    with pytest.raises(ValueError, match=r"gradient on cpu .* given for an output on cpu"):
        (x * 2).backward(ember.ones(2, device=backends.get(backends.current()).device))


def test_learner_moves_batches_to_the_model(other, tmp_path):
    from ember.data import DataLoader, TensorDataset
    from ember.train import Learner

    x = ember.tensor(np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32))  # default backend
    y = ember.tensor(np.arange(16) % 2)
    model = nn.Linear(4, 2).to(other)
    learner = Learner(model, ember.optim.SGD(model.parameters(), lr=0.1), F.cross_entropy, progress=False,
                      plot=False)  # fmt: skip
    learner.fit(DataLoader(TensorDataset(x, y), batch_size=8), epochs=1)
    assert learner.predict(DataLoader(TensorDataset(x), batch_size=8))._backend.name == other.backend


def test_sparse_indices_given_as_data_go_to_the_values(other):
    s = ember.sparse_coo_tensor([[0, 1], [1, 0]], ember.tensor([1.0, 2.0], device=other), (2, 2))
    assert s.coalesce().indices()._backend.name == other.backend
    assert ember.spmm(s, ember.ones(2, 2, device=other))._backend.name == other.backend


@pytest.mark.process_default
def test_from_numpy_stays_on_the_cpu_and_as_tensor_follows_the_default(other):
    a = np.arange(3.0)
    with other:
        shared = ember.from_numpy(a)  # PyTorch: always a CPU tensor sharing the array
        moved = ember.as_tensor(a)  # PyTorch: the default device
    assert shared._backend.name == backends.current() and moved._backend.name == other.backend
    a[0] = 7.0
    assert shared.tolist()[0] == 7.0 and moved.tolist()[0] == 0.0
