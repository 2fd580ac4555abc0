"""Module mechanics: registration, traversal, freezing, map/visit, hooks, state_dict, configs, the model zoo."""

import json

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.models import GPTConfig, LeNet5Config, MLPConfig, ResNetConfig
from ember.testing import torch_or_none


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        self.bn = nn.BatchNorm1d(3)
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 2)})
        self.extra = nn.ParamList([ember.zeros(2)])
        self.scale = 2.0  # a constant: never saved
        self.log = print  # a callable: never saved
        self.other = nn.Ref(nn.Linear(1, 1))  # not owned

    def forward(self, x):
        return self.heads["a"](self.bn(self.body(x))) * self.scale + self.extra[0]


def test_registration_and_traversal():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias", "bn.weight", "bn.bias",
                     "heads.a.weight", "heads.a.bias", "extra.0"]  # fmt: skip
    assert [n for n, _ in m.named_buffers()] == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert list(m.state_dict())[:4] == ["body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias"]
    assert "bn.running_mean" in m.state_dict() and "scale" not in m.state_dict()
    assert [n for n, _ in m.named_children()] == ["body", "bn", "heads", "extra"]
    assert len(list(m.modules())) == 9  # Net, body, body.0-2, bn, heads, heads.a, extra
    assert m.num_params() == 4 * 8 + 8 + 8 * 3 + 3 + 3 + 3 + 3 * 2 + 2 + 2
    assert m.get_submodule("body.2").out_features == 3
    assert m(ember.randn(5, 4)).shape == (5, 2)


def test_module_without_forward_says_so():
    class Holder(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match="Holder defines no forward"):
        Holder()(1)


def test_repr_shows_the_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU())))
    assert text == (
        "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): Sequential(\n    (0): ReLU()\n  )\n)"
    )


def test_freeze_train_eval_zero_grad():
    m = Net()
    m.body.requires_grad_(False)
    m(ember.randn(4, 4)).sum().backward()
    assert m.body[0].weight.grad is None and m.heads["a"].weight.grad is not None
    m.zero_grad()
    assert m.heads["a"].weight.grad is None
    m.eval()
    assert not m.training and not m.bn.training
    m.train()
    assert m.bn.training


def test_map_and_visit_keep_ids():
    m = nn.Linear(3, 2)
    ids = {n: p.id for n, p in m.named_parameters()}
    m.map(lambda name, p: p * 0 + 1)
    assert m.weight.tolist() == [[1.0] * 3] * 2
    seen = []
    m.visit(lambda name, p: seen.append((name, p.id)))
    assert dict(seen) == ids
    m.to(ember.float64)
    assert m.weight.dtype == ember.float64 and m.weight.id == ids["weight"]


def test_hooks_forward_and_backward():
    m = nn.Linear(3, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre"))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 2)
    grads = {}
    h3 = m.register_full_backward_hook(lambda mod, gi, go: grads.update(gi=gi, go=go))
    x = ember.randn(4, 3, requires_grad=True)
    y = m(x)
    y.sum().backward()
    assert calls == ["pre"]
    assert grads["go"][0].shape == (4, 2)
    np.testing.assert_allclose(grads["gi"][0].numpy(), x.grad.numpy())
    np.testing.assert_allclose(y.detach().numpy(), 2 * (x.detach() @ m.weight.detach().T + m.bias.detach()).numpy(),
                               rtol=1e-6)  # fmt: skip
    for h in (h1, h2, h3):
        h.remove()
    calls.clear()
    m(x)
    assert calls == []


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    assert all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    sd = a.state_dict()
    del sd["bn.bias"]
    sd["stray.weight"] = ember.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "bn.bias". \n\tUnexpected key'):
        b.load_state_dict(sd)
    assert b.load_state_dict(sd, strict=False) == (["bn.bias"], ["stray.weight"])
    sd = a.state_dict()
    sd["body.0.weight"] = ember.zeros(2, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch for body.0.weight: copying a param with shape \(2, 2\)"):
        b.load_state_dict(sd)


def test_layers_check_their_input():
    with pytest.raises(ValueError, match="input has 3 channels but weight"):
        nn.Conv2d(2, 4, 3)(ember.zeros(1, 3, 5, 5))
    with pytest.raises(ValueError, match="BatchNorm2d: expected a 4-d input"):
        nn.BatchNorm2d(3)(ember.zeros(2, 3))
    with pytest.raises(ValueError, match="Linear: in_features must be a non-negative integer"):
        nn.Linear(-1, 3)
    with pytest.raises(ValueError, match="in_features differ"):
        nn.Linear(3, 2)(ember.zeros(2, 4))


def test_config_json_round_trip_validation_and_nesting():
    c = nn.Conv2dConfig(3, 8, 3, padding="same")
    again = nn.Conv2dConfig.from_json(c.to_json())
    assert again == c and isinstance(again.init(), nn.Conv2d)
    mc = MLPConfig(64, 10, hidden=(32, 16), activation="gelu")
    assert MLPConfig.from_json(mc.to_json()) == mc
    with pytest.raises(ValueError, match="unknown activation 'gelux'"):
        MLPConfig(64, 10, activation="gelux")
    with pytest.raises(ValueError, match="in_features must be a positive integer"):
        nn.LinearConfig(0, 3)
    with pytest.raises(TypeError, match="LinearConfig: bias must be bool, got str 'yes'"):
        nn.LinearConfig(2, 3, bias="yes")
    with pytest.raises(TypeError, match=r"MLPConfig: in_features must be int, got float 64\.0"):
        MLPConfig.from_json(json.dumps({"in_features": 64.0, "out_features": 10}))
    with pytest.raises(ValueError, match=r"unknown fields \['colour'\]"):
        nn.LinearConfig.from_json(json.dumps({"in_features": 2, "out_features": 3, "colour": 1}))

    class Pair(ember.Config):
        left: nn.LinearConfig
        right: nn.LinearConfig

    p = Pair(nn.LinearConfig(2, 3), nn.LinearConfig(3, 1))
    assert Pair.from_json(p.to_json()) == p


def test_config_save_load(tmp_path):
    c = GPTConfig(n_layer=1)
    c.save(tmp_path / "gpt.json")
    assert GPTConfig.load(tmp_path / "gpt.json") == c


def test_init_with_equals_init_then_load():
    cfg = LeNet5Config(image_size=8)
    ember.manual_seed(1)
    src = cfg.init()
    rec = src.into_record()
    a = cfg.init_with(rec)
    b = cfg.init()
    b.load_record(rec)
    for (n, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert np.array_equal(x.numpy(), y.numpy()), n
    assert [p.id for p in a.parameters()] == [p.id for p in src.parameters()]


@pytest.mark.skipif(torch_or_none() is None, reason="torch not installed")
def test_resnet18_matches_a_torch_resnet_with_its_state_dict(tmp_path):
    import torch

    tn = torch.nn

    class TBlock(tn.Module):
        def __init__(self, cin, planes, stride):
            super().__init__()
            self.conv1 = tn.Conv2d(cin, planes, 3, stride, 1, bias=False)
            self.bn1 = tn.BatchNorm2d(planes)
            self.relu = tn.ReLU()
            self.conv2 = tn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = tn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or cin != planes:
                self.downsample = tn.Sequential(tn.Conv2d(cin, planes, 1, stride, bias=False), tn.BatchNorm2d(planes))

        def forward(self, x):
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(out + (self.downsample(x) if self.downsample is not None else x))

    class TResNet18(tn.Module):  # torchvision's layout and names
        def __init__(self):
            super().__init__()
            self.conv1 = tn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = tn.BatchNorm2d(64)
            self.relu = tn.ReLU()
            self.maxpool = tn.MaxPool2d(3, 2, 1)
            cin = 64
            for i, planes in enumerate([64, 128, 256, 512]):
                s = 1 if i == 0 else 2
                setattr(self, f"layer{i + 1}", tn.Sequential(TBlock(cin, planes, s), TBlock(planes, planes, 1)))
                cin = planes
            self.avgpool = tn.AdaptiveAvgPool2d((1, 1))
            self.fc = tn.Linear(512, 10)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    torch.manual_seed(0)
    t = TResNet18()
    with torch.no_grad():  # non-trivial running statistics
        for mod in t.modules():
            if isinstance(mod, tn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
    t.eval()
    e = ResNetConfig(18, num_classes=10).init().eval()
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with torch.no_grad():
        want = t(torch.tensor(x)).numpy()
    got = e(ember.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)
    # torch.save -> Ember, and Ember -> a .pt file that torch loads
    from ember.record import load_weights, save_torch_state_dict

    torch.save(t.state_dict(), tmp_path / "r18.pt")
    e2 = ResNetConfig(18, num_classes=10).init().eval()
    assert load_weights(e2, tmp_path / "r18.pt", strict=True) == ([], [])
    np.testing.assert_allclose(e2(ember.tensor(x)).detach().numpy(), want, atol=1e-4, rtol=1e-4)
    save_torch_state_dict(e2, tmp_path / "back.pt")
    t2 = TResNet18().eval()
    t2.load_state_dict(torch.load(tmp_path / "back.pt", weights_only=True))
    with torch.no_grad():
        np.testing.assert_allclose(t2(torch.tensor(x)).numpy(), want, atol=1e-5, rtol=1e-5)


def test_model_zoo_shapes():
    assert MLPConfig(64, 10).init()(ember.randn(2, 64)).shape == (2, 10)
    assert LeNet5Config().init()(ember.randn(2, 1, 28, 28)).shape == (2, 10)
    assert GPTConfig(n_layer=1).init()(ember.randint(0, 256, (2, 7))).shape == (2, 7, 256)
    assert ResNetConfig(50, num_classes=5).init().num_params() > 20_000_000
