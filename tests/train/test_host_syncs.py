"""No hidden host syncs: a training step on the torch backend, run as on an accelerator (``cheap_sync`` off),
reads nothing back to the host; the Learner reads exactly its logging points (one loss per batch, the
metrics once per epoch). Device-to-host reads are counted on torch's tensors (item, tolist, bool, float,
int, index, __array__, cpu(), .to('cpu'))."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import backends

# (``numpy()`` is left out: on a GPU it raises unless ``cpu()``, counted, came first)
READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__array__", "cpu")


@pytest.fixture
def torch_accel(monkeypatch, torch):
    """The torch CPU backend behaving as an accelerator, and a counter of device-to-host reads."""
    monkeypatch.setattr(backends.get("torch"), "_cheap_sync", False)
    reads: list[str] = []

    def counting(name, original):
        def read(self, *args, **kw):
            reads.append(name)
            return original(self, *args, **kw)

        return read

    for name in READS:
        monkeypatch.setattr(torch.Tensor, name, counting(name, getattr(torch.Tensor, name)))
    to = torch.Tensor.to

    def to_host(self, *args, **kw):
        if any(str(a) == "cpu" for a in (*args, kw.get("device"))):
            reads.append("to('cpu')")
        return to(self, *args, **kw)

    monkeypatch.setattr(torch.Tensor, "to", to_host)
    with backends.use("torch"):
        yield reads


def _steps(model, opt, x, y, loss_fn, clip=None, n=3):
    params = [p for g in opt.param_groups for p in g["params"]]
    for _ in range(n):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(params, clip)
        opt.step()


def test_mlp_sgd_step_reads_nothing(torch_accel):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x, y = ember.randn(5, 8), ember.randint(0, 4, (5,))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _steps(model, opt, x, y, F.cross_entropy, n=1)  # warm-up (first-step state)
    torch_accel.clear()
    _steps(model, opt, x, y, F.cross_entropy)
    assert torch_accel == []


def test_cnn_with_batch_norm_adam_and_clipping_reads_nothing(torch_accel):
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 3))  # fmt: skip
    x, y = ember.randn(6, 1, 8, 8), ember.randint(0, 3, (6,))
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    _steps(model, opt, x, y, F.cross_entropy, clip=1.0, n=1)
    torch_accel.clear()
    _steps(model, opt, x, y, F.cross_entropy, clip=1.0)
    assert torch_accel == []


def test_transformer_block_adamw_reads_nothing(torch_accel):
    model = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
    x = ember.randn(2, 5, 16)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    mask = nn.Transformer.generate_square_subsequent_mask(5)

    def forward(inp):
        return model(inp, src_mask=mask, is_causal=True)

    _steps(forward, opt, x, x, F.mse_loss, clip=0.5, n=1)
    torch_accel.clear()
    _steps(forward, opt, x, x, F.mse_loss, clip=0.5)
    assert torch_accel == []


def test_mixed_precision_step_reads_once_in_scaler_step(torch_accel):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x, y = ember.randn(5, 8), ember.randint(0, 4, (5,))
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    for step in range(3):
        if step == 1:
            torch_accel.clear()
        with ember.autocast("cpu"):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)  # reads the inf/NaN flag (PyTorch's GradScaler syncs here too)
        scaler.update()
    assert torch_accel == ["__float__", "__float__"]  # steps 1 and 2: one flag each


def test_learner_reads_one_loss_per_batch_and_metrics_per_epoch(torch_accel, tmp_path):
    from ember.data import DataLoader, TensorDataset
    from ember.train import Learner

    rng = np.random.default_rng(0)
    ds = TensorDataset(ember.tensor(rng.standard_normal((32, 6)).astype(np.float32)),
                       ember.tensor(rng.integers(0, 3, 32)))  # fmt: skip
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    learner = Learner(model, ember.optim.Adam(model.parameters()), F.cross_entropy, progress=False, plot=False,
                      metrics=["loss", "accuracy"], grad_clip_norm=1.0)  # fmt: skip
    torch_accel.clear()
    learner.fit(DataLoader(ds, batch_size=8), DataLoader(ds, batch_size=16), epochs=1)
    # 4 training + 2 validation batches: one loss read each; accuracy read once per split at the epoch's end
    assert len(torch_accel) == 6 + 2, torch_accel


def test_optimizer_steps_copy_no_host_values_to_the_device(torch_accel, torch, monkeypatch):
    """A host value made into a device tensor (``torch.tensor(v, device=...)``) is a copy that waits for the
    GPU's queue: Adam's step count is made by a fill instead; and a group is one multi-tensor call."""
    made: list[object] = []
    tensor = torch.tensor

    def counting(*args, **kw):
        if kw.get("device") is not None:
            made.append(kw["device"])
        return tensor(*args, **kw)

    monkeypatch.setattr(torch, "tensor", counting)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x, y = ember.randn(5, 8), ember.randint(0, 4, (5,))
    for opt in (ember.optim.Adam(model.parameters(), amsgrad=True), ember.optim.AdamW(model.parameters())):
        _steps(model, opt, x, y, F.cross_entropy, n=1)
        made.clear()
        _steps(model, opt, x, y, F.cross_entropy)
        assert made == []
    assert torch_accel == []
