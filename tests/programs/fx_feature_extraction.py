"""torch.fx as PyTorch users write it: trace a small ResNet, extract intermediate features (torchvision's
create_feature_extractor idea), fold conv+bn for inference, propagate shapes with ShapeProp, swap activations,
and fine-tune the traced module."""

import copy

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx import GraphModule, symbolic_trace
from torch.fx.passes.shape_prop import ShapeProp

torch.manual_seed(0)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class TinyResNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, stride=2)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def create_feature_extractor(model, return_nodes):
    """Trace ``model`` and return a GraphModule whose output is a dict of the named intermediate nodes."""
    gm = symbolic_trace(model)
    nodes = {n.name: n for n in gm.graph.nodes}
    missing = [k for k in return_nodes if k not in nodes]
    if missing:
        raise ValueError(f"unknown nodes {missing}; available: {list(nodes)}")
    for n in list(gm.graph.nodes):
        if n.op == "output":
            gm.graph.erase_node(n)
    with gm.graph.inserting_after(list(gm.graph.nodes)[-1]):
        gm.graph.output({new: nodes[old] for old, new in return_nodes.items()})
    gm.graph.eliminate_dead_code()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def fuse_conv_bn(model):
    """Fold every BatchNorm2d that directly follows a Conv2d into the conv (inference only)."""
    model = copy.deepcopy(model).eval()
    gm = symbolic_trace(model)
    modules = dict(gm.named_modules())
    folded = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        prev = node.args[0]
        if not isinstance(prev, torch.fx.Node) or prev.op != "call_module":
            continue
        if not isinstance(modules[prev.target], nn.Conv2d) or len(prev.users) > 1:
            continue
        conv, bn = modules[prev.target], modules[node.target]
        fused = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
        parent, _, name = prev.target.rpartition(".")
        setattr(gm.get_submodule(parent) if parent else gm, name, fused)
        node.replace_all_uses_with(prev)
        gm.graph.erase_node(node)
        folded += 1
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm, folded


model = TinyResNet()
for m in model.modules():  # non-trivial running statistics, as after training
    if isinstance(m, nn.BatchNorm2d):
        with torch.no_grad():
            m.running_mean.uniform_(-0.3, 0.3)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.uniform_(0.5, 1.5)
model.eval()
x = torch.randn(4, 3, 16, 16)

# 1. the graph and its generated code
traced = symbolic_trace(model)
assert isinstance(traced, GraphModule)
ops = [n.op for n in traced.graph.nodes]
print(f"traced {len(ops)} nodes: {ops.count('call_module')} module calls, {ops.count('call_function')} functions")
assert torch.allclose(traced(x), model(x))
assert "def forward(self, x)" in traced.code

# 2. feature extraction
extractor = create_feature_extractor(model, {"layer1_bn2": "mid", "relu_3": "late"})
feats = extractor(x)
print("features:", {k: tuple(v.shape) for k, v in feats.items()})
assert tuple(feats["mid"].shape) == (4, 8, 16, 16) and tuple(feats["late"].shape) == (4, 16, 8, 8)
assert not hasattr(extractor, "fc"), "the head is not needed for these features"

# 3. conv+bn folding
fused, folded = fuse_conv_bn(model)
err = (fused(x) - model(x)).abs().max().item()
print(f"folded {folded} batch norms, max difference {err:.2e}")
assert folded == 6 and err < 1e-4
assert not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())

# 4. shape propagation
ShapeProp(traced).propagate(x)
shapes = {n.name: tuple(n.meta["tensor_meta"].shape) for n in traced.graph.nodes if "tensor_meta" in n.meta}
print("shapes:", shapes["stem_0"], shapes["layer2_conv1"], shapes["flatten"], shapes["fc"])
assert shapes["fc"] == (4, 5) and shapes["flatten"] == (4, 16)
assert traced.graph.find_nodes(op="output")[0].meta["tensor_meta"].dtype == torch.float32


# 5. an Interpreter pass counting the work, and a rewrite to GELU
class CountModules(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.calls = 0

    def call_module(self, target, args, kwargs):
        self.calls += 1
        return super().call_module(target, args, kwargs)


counter = CountModules(traced)
assert torch.equal(counter.run(x), traced(x))
print("module calls run by the interpreter:", counter.calls)
for node in list(traced.graph.nodes):
    if node.op == "call_function" and node.target in (F.relu, torch.relu):
        with traced.graph.inserting_after(node):
            gelu = traced.graph.call_function(F.gelu, (node.args[0],))
        node.replace_all_uses_with(gelu)
        traced.graph.erase_node(node)
traced.graph.lint()
traced.recompile()
assert "gelu" in traced.code and not torch.allclose(traced(x), model(x))

# 6. fine-tune the traced module: it shares its parameters with the model
traced.train()
opt = torch.optim.SGD(traced.parameters(), lr=0.05)
target = torch.randint(0, 5, (4,))
losses = []
for _ in range(5):
    opt.zero_grad()
    loss = F.cross_entropy(traced(x), target)
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("losses:", [round(v, 4) for v in losses])
assert losses[-1] < losses[0]
assert traced.fc.weight is model.fc.weight
