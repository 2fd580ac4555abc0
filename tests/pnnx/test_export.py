"""Models exported by the real pnnx converter run in Ember exactly as in torch (needs torch and pnnx)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.pnnx as ep


def _run_both(model, path, x):
    import torch

    with torch.no_grad():
        ref = model(x)
    ref = ref if isinstance(ref, tuple) else (ref,)
    got = ep.load(path)(ember.tensor(x.numpy()))
    got = got if isinstance(got, tuple) else (got,)
    return got, ref


@pytest.mark.parametrize("key", ["resnet_o1", "resnet_o2", "yolo_o1", "yolo_o2", "yolo_raw_o2"])
def test_exported_model_matches_torch(exported, key):
    model, path, x = exported[key]
    got, ref = _run_both(model, path, x)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert tuple(g.shape) == tuple(r.shape)
        np.testing.assert_allclose(g.detach().numpy(), r.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("key", ["resnet_o2", "yolo_o1", "yolo_o2"])
def test_batch_size_is_free(exported, key):
    import torch

    model, path, x = exported[key]
    xb = torch.cat([x, torch.rand_like(x), torch.rand_like(x)])
    got, ref = _run_both(model, path, xb)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.detach().numpy(), r.numpy(), rtol=1e-4, atol=1e-4)


def test_exported_graphs_use_the_expected_operators(exported):
    counts = {k: ep.operator_counts(ep.read_param(v[1])) for k, v in exported.items()}
    assert "nn.BatchNorm2d" in counts["resnet_o1"] and "nn.BatchNorm2d" not in counts["resnet_o2"]
    for op in ("Tensor.slice", "pnnx.Attribute", "torch.split", "F.sigmoid", "Tensor.permute", "nn.Upsample"):
        assert op in counts["yolo_o2"], op
    assert "prim::TupleConstruct" in counts["yolo_raw_o2"]
    for c in counts.values():
        assert set(c) <= set(ep.SUPPORTED_TYPES)


def test_loaded_model_is_trainable_and_saves_as_a_record(exported, tmp_path):
    _, path, x = exported["resnet_o1"]
    m = ep.load(path)
    params = list(m.parameters())
    assert params and all(isinstance(p, ember.nn.Param) for p in params)
    assert {"bn1.running_mean", "fc.weight"} <= set(m.state_dict())
    m.train()
    loss = m(ember.randn(4, *x.shape[1:])).pow(2).mean()
    loss.backward()
    assert all(p.grad is not None for p in params)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    opt.step()
    m.eval()
    m.save(tmp_path / "tuned.mpk")
    fresh = ep.load(path)
    fresh.load(tmp_path / "tuned.mpk")
    xe = ember.tensor(x.numpy())
    np.testing.assert_array_equal(fresh(xe).detach().numpy(), m(xe).detach().numpy())
    assert not np.allclose(ep.load(path)(xe).detach().numpy(), m(xe).detach().numpy())
