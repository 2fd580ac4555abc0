"""Ember inside a process where ``torch`` means Ember (``sys.modules["torch"] = ember``, or a forwarding package).

Each program runs in a subprocess: it asks ``torch.cuda``/``torch.accelerator`` (which once recursed
forever: the backend registry imported "torch" to look for PyTorch and got Ember), saves and loads
through ``torch.save``/``torch.load``, and rebuilds a model that real PyTorch saved whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ember

SRC = str(Path(ember.__file__).resolve().parents[1])

NETDEF = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1)
        self.fc = torch.nn.Linear(2 * 4 * 4, 3)
        self.scale = 0.5

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1)) * self.scale
"""

PROGRAM = """
import sys
import numpy as np
{alias}
import torch
import ember
assert torch is not None and torch.tensor is ember.tensor
assert torch.cuda.is_available() == ember.cuda.is_available()
assert torch.cuda.device_count() == ember.cuda.device_count()
assert torch.accelerator.is_available() == torch.cuda.is_available()
assert (torch.accelerator.current_accelerator() is None) == (not torch.cuda.is_available())
assert not ember.backends.available()["torch"], ember.backends.available()["torch"]
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision("high")
torch.set_num_threads(torch.get_num_threads())  # (it called "torch".set_num_threads: itself, forever)
assert torch.distributed.is_available() is False  # (it asked "torch".distributed: itself, forever; HF asks on import)
assert isinstance(torch.float32, torch.dtype) and torch.version.cuda is None and torch.version.hip is None

import torch.nn as nn  # submodules by import statement: Ember's own modules, never a second copy of Ember
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import torch.optim.lr_scheduler
copies = [k for k in sys.modules if k.startswith("torch.") and sys.modules[k] is not sys.modules.get("ember." + k[6:])]
assert not copies, copies
assert nn is ember.nn and F is ember.nn.functional and DataLoader is ember.utils.data.DataLoader
assert isinstance(nn.Conv2d(1, 1, 1).weight, ember.Tensor)
assert F.conv2d(torch.rand(1, 1, 3, 3), nn.Conv2d(1, 2, 3).weight).shape == (1, 2, 1, 1)
assert ember.nn.__spec__.name == "ember.nn"
try:
    import torch.no_such_module
    raise SystemExit("a module Ember lacks imported")
except ModuleNotFoundError as e:
    assert "torch.no_such_module" in str(e), e

sd = {{"w": torch.arange(6.0).reshape(2, 3), "step": 3}}
torch.save(sd, "own.pt")
back = torch.load("own.pt")
assert back["w"].tolist() == sd["w"].tolist() and back["step"] == 3

state = torch.load("real_state.pt")  # a state_dict real PyTorch wrote: Ember's own reader
assert sorted(state) == ["conv.bias", "conv.weight", "fc.bias", "fc.weight"], sorted(state)

import netdef
try:
    torch.load("real_model.pt")
    raise SystemExit("a whole model loaded without weights_only=False")
except Exception as e:
    assert "netdef.Net" in str(e) and "weights_only=False" in str(e), e
model = torch.load("real_model.pt", weights_only=False)
assert isinstance(model, netdef.Net) and isinstance(model.fc, torch.nn.Linear), type(model)
out = model(torch.tensor(np.load("x.npy"))).detach().numpy()
np.testing.assert_allclose(out, np.load("y.npy"), rtol=1e-5, atol=1e-6)
compiled = torch.compile(model)  # PyTorch programs compile their models: Ember captures and replays
with torch.no_grad():
    for _ in range(3):
        assert compiled(torch.tensor(np.load("x.npy"))).numpy().tobytes() == out.tobytes()
model.load_state_dict(state)
torch.save(model, "again.pt")
assert isinstance(torch.load("again.pt", weights_only=False), netdef.Net)
print("OK")
"""

ALIASES = {
    "sys.modules": 'import ember\nsys.modules["torch"] = ember',
    "package": "",  # a torch/ package on the path that forwards to Ember
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A model real PyTorch saved whole (class in netdef.py), its state_dict, an input and its output."""
    torch = pytest.importorskip("torch")
    d = tmp_path_factory.mktemp("alias")
    (d / "netdef.py").write_text(NETDEF)
    sys.path.insert(0, str(d))
    try:
        import netdef

        torch.manual_seed(0)
        net = netdef.Net().eval()
        x = torch.randn(2, 1, 4, 4)
        torch.save(net, d / "real_model.pt")
        torch.save(net.state_dict(), d / "real_state.pt")
        np.save(d / "x.npy", x.numpy())
        np.save(d / "y.npy", net(x).detach().numpy())
    finally:
        sys.path.remove(str(d))
        sys.modules.pop("netdef", None)
    return d


@pytest.mark.parametrize("how", list(ALIASES))
def test_program_with_torch_aliased_to_ember(files, how, tmp_path):
    for f in files.iterdir():
        if f.is_file():
            (tmp_path / f.name).write_bytes(f.read_bytes())
    path = [SRC]
    if how == "package":
        pkg = tmp_path / "shim" / "torch"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(
            "import ember\nfrom ember import *  # noqa\n\n\ndef __getattr__(name):\n    return getattr(ember, name)\n"
        )
        path.insert(0, str(tmp_path / "shim"))
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM.format(alias=ALIASES[how])))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(tmp_path)])}
    env.pop("EMBER_BACKEND", None)  # the torch backend is what the alias makes unavailable
    env.pop("EMBER_DEVICE", None)  # a PyTorch program: its default device is the CPU (make test-cuda sets cuda)
    r = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_real_torch_is_recognised(torch, monkeypatch):
    assert ember.backends.real_torch() is torch
    monkeypatch.setitem(sys.modules, "torch", ember)
    assert ember.backends.real_torch() is None
    assert "not PyTorch" in ember.backends.available()["torch"].reason
    assert ember.cuda.is_available() is False or ember.backends.available()["cupy"]
