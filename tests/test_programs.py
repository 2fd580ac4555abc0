"""Well-known PyTorch programs, written as PyTorch users write them, run with ``torch`` aliased to Ember.
``tests/programs/`` holds small-data versions of the programs people learn PyTorch from (pytorch/examples' MNIST,
ImageNet (a small ResNet: channels_last, GradScaler, checkpoint and resume), DCGAN, word language model, VAE,
actor-critic, super-resolution, fast neural style; the tutorials' DQN, spatial transformer, seq2seq with attention,
custom autograd Function, text classification with EmbeddingBag; PPO with a Gaussian policy; a bidirectional LSTM
tagger on packed sequences; a WGAN-GP with spectral norm, a UNet with checkpointing and grid_sample, masked attention;
a normalizing flow, style transfer by LBFGS with forward hooks, distillation and metric losses; a seed-everything
reproducibility check; sharded IterableDatasets, dict/namedtuple batches and module containers; nanoGPT; a LLaMA-style
model with rotary embeddings and a KV cache; a BERT-style classifier with a DataLoader of workers; big-model loading
on the meta device: ``init_empty_weights``, ``to_empty``, ``load_state_dict(assign=True)``; a ViT and a Perceiver
written with einops, which then runs on Ember through the alias; safetensors' save_model/load_model with a tied
embedding; pytorch/examples' siamese network, mnist_rnn and time_sequence_prediction's LBFGS closure; a CIFAR recipe
(mixup, label smoothing, OneCycleLR, an EMA model, channels_last, bfloat16 autocast, accumulation, resume), a tabular
model with a weighted sampler and an stft audio classifier; torch.fx feature extraction, conv+bn folding, ShapeProp
and fine-tuning a traced module; the FGSM, char-RNN (hand-written cell, generation) and Grad-CAM tutorials with
distillation). Each runs in a subprocess where ``sys.modules["torch"]`` is Ember, and must finish
as under PyTorch (``EMBER_TEST_PROGRAMS_TORCH=1`` runs them under PyTorch, to check a program).
Running them found: ``import torch.nn`` loading a second copy of Ember ("expected a Tensor, got Tensor"), the
losses' ``size_average`` argument and ``autograd.grad``'s ``only_inputs`` missing, ``set_num_threads`` calling
itself through the alias, and ``torch.compile(model)`` replaying stale attention in nanoGPT.
They run once, in the NumPy suite (the alias makes the torch backend unavailable).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ember

HERE = Path(__file__).parent / "programs"
SRC = str(Path(ember.__file__).resolve().parents[1])
PROGRAMS = sorted(p.stem for p in HERE.glob("*.py"))
ALIAS = "import sys, ember, runpy; sys.modules['torch'] = ember; runpy.run_path(sys.argv[1], run_name='__main__')"

pytestmark = pytest.mark.skipif(ember.backends.current() != "numpy", reason="runs once, in the NumPy suite")


def _run(name: str, tmp_path: Path, alias: bool) -> subprocess.CompletedProcess[str]:
    prog = tmp_path / f"{name}.py"
    shutil.copy(HERE / f"{name}.py", prog)
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONWARNINGS": "ignore"}
    for key in ("EMBER_BACKEND", "EMBER_DEVICE", "EMBER_TEST_MIXED"):
        env.pop(key, None)
    cmd = [sys.executable, "-c", ALIAS, str(prog)] if alias else [sys.executable, str(prog)]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_runs_with_torch_aliased_to_ember(name: str, tmp_path: Path) -> None:
    r = _run(name, tmp_path, alias=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert r.stdout.strip(), "the program printed nothing"


@pytest.mark.skipif(not os.environ.get("EMBER_TEST_PROGRAMS_TORCH"), reason="checks the programs, not Ember: opt-in")
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_is_a_working_pytorch_program(name: str, tmp_path: Path) -> None:
    """Each program under PyTorch itself (EMBER_TEST_PROGRAMS_TORCH=1; every one passed with torch 2.13.0)."""
    pytest.importorskip("torch")
    r = _run(name, tmp_path, alias=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
