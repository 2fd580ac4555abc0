"""``_compile/_cuda_graph.py`` run on torch-CPU through a stand-in for ``torch.cuda``'s graphs
(``cuda_graph_standin.py``: capture launches nothing, replay reruns the captured kernels on the same memory with
their Python values baked in). Nothing here ran on a GPU; ``test_compile_cuda.py`` is the same check on CUDA."""

from __future__ import annotations

import warnings

import pytest

import ember
import ember.nn as nn

torch = pytest.importorskip("torch")

from ember._compile._cuda_graph import CudaGraphProgram  # noqa: E402

from .cuda_graph_standin import install  # noqa: E402


@pytest.fixture
def graphs(monkeypatch):
    """Graphs through the stand-in, on torch-CPU taking the accelerator's paths (no host checks, as on CUDA)."""
    monkeypatch.setattr(ember.backends.get("torch"), "_cheap_sync", False)
    with ember.backends.use("torch"):
        yield install(monkeypatch)


def test_eval_forward_is_replayed_through_the_graph(graphs):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    cm = ember.compile(model)
    with ember.no_grad():
        for _ in range(5):
            x = ember.randn(3, 8)
            assert ember.equal(cm(x), model(x))
        assert isinstance(cm._compiled.cache[0].program, CudaGraphProgram)
        assert len(graphs) == 1 and graphs[0].replays == 3  # calls 3-5 (1: recorded, 2: checked replay)
        with ember.no_grad():  # the graph reads the parameters' memory: an in-place change is seen
            model[0].weight.mul_(0.5)
        x = ember.randn(3, 8)
        assert ember.equal(cm(x), model(x)) and graphs[0].replays == 4
        out = cm(x)
        cm(ember.randn(3, 8))
        assert ember.equal(out, model(x))  # a result is a copy, not the graph's memory


def _make(kind, lr):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    params = model.parameters()
    opt = {"sgd": lambda: ember.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=1e-3),
           "adam": lambda: ember.optim.Adam(params, lr=lr),
           "adamw": lambda: ember.optim.AdamW(params, lr=lr, weight_decay=0.05, amsgrad=True)}[kind]()  # fmt: skip
    return model, opt


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = ember.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _bits(a, b):
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))
    )


def _steps_equal(kind, rates):
    """Compiled and eager twins stepped with the rate ``rates[i]`` at step ``i``; every bit compared. The graphs."""
    m1, o1 = _make(kind, rates[0])
    m2, o2 = _make(kind, rates[0])
    compiled = ember.compile(lambda x, y: _step(m1, o1, x, y))
    kept = None
    for i, rate in enumerate(rates):
        x, y = ember.randn(6, 8), ember.randint(0, 4, (6,))
        for o in (o1, o2):
            o.param_groups[0]["lr"] = rate
        a, b = compiled(x, y), _step(m2, o2, x, y)
        assert _bits(a._data, b._data), i
        for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
            assert _bits(p._data, q._data) and _bits(p.grad._data, q.grad._data), i
        for st1, st2 in zip(o1.state_dict()["state"].values(), o2.state_dict()["state"].values(), strict=True):
            for name, v in st1.items():
                assert _bits(v._data, st2[name]._data) if isinstance(v, ember.Tensor) else v == st2[name], (i, name)
        if kept is not None:  # last step's gradient is not the graph's memory
            assert _bits(kept[0], kept[1])
        g = next(m1.parameters()).grad
        kept = (g._data, g._data.clone())
    assert isinstance(compiled.cache[0].program, CudaGraphProgram)


@pytest.mark.parametrize("kind", ["sgd", "adam", "adamw"])
def test_a_training_step_is_replayed_through_the_graph_bit_for_bit(graphs, kind):
    # a scheduler's new rate: a float32 value (2^-5, 2^-6) stays live in the graph, 0.01 replays the plain program
    start = 0.125 if kind == "sgd" else 2**-7
    _steps_equal(kind, [start] * 5 + [2**-5, 2**-5, 0.01, 2**-6])
    assert len(graphs) == 1 and graphs[0].replays == 6  # calls 3-9 but 8 (lr 0.01)


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
def test_a_constant_rate_that_is_no_float32_value_is_baked_into_the_graph(graphs, kind):
    # 0.01 is baked as eager passes it: the graph replays while the rate stays 0.01, the plain program otherwise
    _steps_equal(kind, [0.01] * 5 + [0.02, 0.01, 2**-5, 0.01])
    assert len(graphs) == 1 and graphs[0].replays == 5  # calls 3-9 but 6 (0.02) and 8 (2^-5)


def test_a_step_without_a_graph_form_replays_the_plain_program(graphs):
    m1, m2 = nn.Linear(8, 4, bias=False), nn.Linear(8, 4, bias=False)
    with ember.no_grad():
        m2.weight.mul_(0).add_(m1.weight)
    o1, o2 = (ember.optim.SGD(m.parameters(), lr=0.125, momentum=0.9) for m in (m1, m2))
    compiled = ember.compile(lambda x, y: _step(m1, o1, x, y))
    with pytest.warns(UserWarning, match="no CUDA graph .*one parameter"):
        for _ in range(4):
            x, y = ember.randn(6, 8), ember.randint(0, 4, (6,))
            assert _bits(compiled(x, y)._data, _step(m2, o2, x, y)._data)
    assert _bits(m1.weight._data, m2.weight._data) and not graphs


def test_a_gradient_accumulated_across_calls_is_a_graph_input(graphs):
    # the op chain's step: backward without zero_grad, so each call adds to the leaf's gradient from before it
    x1 = ember.randn(8, requires_grad=True)
    x2 = ember.tensor(x1.detach().numpy(), requires_grad=True)

    def chain(x):
        y = x
        for _ in range(3):
            y = ((y + 1.0) * 0.5).tanh()
        s = y.sum()
        s.backward()
        return s

    compiled = ember.compile(lambda: chain(x1))
    for i in range(6):
        assert _bits(compiled()._data, chain(x2)._data) and _bits(x1.grad._data, x2.grad._data), i
    assert isinstance(compiled.cache[1].program, CudaGraphProgram)  # (cache[0]: the first call, no .grad yet)
    assert len(graphs) == 1 and graphs[0].replays == 3  # calls 4-6 (2: recorded with a .grad, 3: checked)
    kept = x1.grad
    was = kept._data.clone()
    compiled(), chain(x2)
    assert _bits(kept._data, was) and _bits(x1.grad._data, x2.grad._data)  # the last gradient: not graph memory


def test_gradient_accumulation_over_micro_batches_replays_through_the_graph(graphs):
    m1, o1 = _make("sgd", 0.125)
    m2, o2 = _make("sgd", 0.125)

    def micro(model, x, y):
        loss = ember.nn.functional.cross_entropy(model(x), y) / 3
        loss.backward()
        return loss

    compiled = ember.compile(lambda x, y: micro(m1, x, y))
    for i in range(12):  # 4 optimizer steps of 3 micro-batches each
        x, y = ember.randn(6, 8), ember.randint(0, 4, (6,))
        assert _bits(compiled(x, y)._data, micro(m2, x, y)._data), i
        for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
            assert _bits(p.grad._data, q.grad._data), i
        if i % 3 == 2:
            for o in (o1, o2):
                o.step()
                o.zero_grad()
            for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
                assert _bits(p._data, q._data), i
    assert any(isinstance(e.program, CudaGraphProgram) for e in compiled.cache)
    assert sum(g.replays for g in graphs) >= 4


def test_a_training_step_with_batch_norm_statistics_is_replayed_through_the_graph(graphs):
    # the running statistics are written in place by the graph (their memory is the buffers'), bit for bit
    def make():
        ember.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(144, 5))
        return model, ember.optim.SGD(model.parameters(), lr=0.125, momentum=0.9)

    (m1, o1), (m2, o2) = make(), make()
    compiled = ember.compile(lambda x, y: _step(m1, o1, x, y))
    for i in range(6):
        x, y = ember.randn(4, 3, 8, 8), ember.randint(0, 5, (4,))
        assert _bits(compiled(x, y)._data, _step(m2, o2, x, y)._data), i
        for (name, a), b in zip(m1.state_dict().items(), m2.state_dict().values(), strict=True):
            assert _bits(a._data, b._data), (i, name)
    assert isinstance(compiled.cache[0].program, CudaGraphProgram)
    assert len(graphs) == 1 and graphs[0].replays == 4  # calls 3-6
    m1.eval(), m2.eval()  # another flag: another program, and the statistics stay as they are
    x = ember.randn(4, 3, 8, 8)
    with ember.no_grad():
        assert _bits(m1(x)._data, m2(x)._data)


@pytest.mark.parametrize("same_input", [False, True])
def test_a_step_that_sets_an_inputs_gradient_replays_the_plain_program(graphs, same_input):
    # the graph runs on static copies of the inputs: their .grad would be lost (the H200 run of 2026-11-26)
    def step(x):
        y = ((x + 1.0) * 0.5).tanh()
        y.sum().backward()
        return y

    compiled = ember.compile(step)
    x = ember.randn(8)
    xs = [x.clone().requires_grad_(True), x.clone().requires_grad_(True)]
    for i in range(5):
        if not same_input:
            x = ember.randn(8)
            xs = [x.clone().requires_grad_(True), x.clone().requires_grad_(True)]
        a, b = compiled(xs[0]), step(xs[1])
        assert _bits(a._data, b._data) and _bits(xs[0].grad._data, xs[1].grad._data), i
    assert not graphs
    assert compiled.graph_skips == ["the step reads or sets an input's .grad (the graph runs on static copies of "
                                    "the inputs)"]  # fmt: skip


def _dropout_step(model, opt, x, y):
    opt.zero_grad()
    loss = ember.nn.functional.cross_entropy(ember.nn.functional.dropout(model(x), 0.25), y)
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize(
    ("kind", "why"), [("dropout", "a random draw ("), ("rmsprop", "step as called here has no graph form")]
)
def test_why_a_step_has_no_graph_is_kept_and_noted_when_graphs_were_asked_for(graphs, monkeypatch, kind, why):
    # the reason is on the compiled function (as PyTorch counts its cudagraph skips); a one-time warning only
    # with mode="reduce-overhead", where the user asked for graphs
    from ember._compile import _api

    monkeypatch.setattr(_api, "_NOTED", set())
    for mode in (None, "reduce-overhead"):
        model, opt = _make("sgd", 0.125)
        if kind == "rmsprop":
            opt = ember.optim.RMSprop(model.parameters(), lr=0.125)
        step = _dropout_step if kind == "dropout" else _step
        compiled = ember.compile(lambda x, y: step(model, opt, x, y), mode=mode)  # noqa: B023
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for _ in range(3):
                compiled(ember.randn(6, 8), ember.randint(0, 4, (6,)))
        assert not compiled.eager and len(compiled.graph_skips) == 1, compiled.graph_skips
        assert compiled.graph_skips[0].startswith(why), compiled.graph_skips
        noted = [str(w.message) for w in seen if "no CUDA graph" in str(w.message)]
        expected = f"ember.compile: no CUDA graph for {compiled._name()}: {compiled.graph_skips[0]}"
        assert noted == ([] if mode is None else [expected])
    assert not graphs


def test_no_reason_is_kept_where_graphs_are_not_in_question(graphs):
    with ember.device("cpu"), ember.backends.use("numpy"):  # (a GPU machine's default device is cuda)
        model, opt = _make("sgd", 0.125)
        compiled = ember.compile(lambda x, y: _step(model, opt, x, y), mode="reduce-overhead")
        for _ in range(3):
            compiled(ember.randn(6, 8), ember.randint(0, 4, (6,)))
    assert compiled.graph_skips == [] and not graphs and not compiled.eager


def test_a_program_writing_its_input_in_place_writes_the_callers_tensor_after_each_replay(graphs):
    """The graph runs on static copies of the inputs: one it writes (ReLU(inplace=True) on the argument) is copied
    back into the caller's tensor after each replay, as eager and the plain program write it."""
    seq = nn.Sequential(nn.ReLU(inplace=True), nn.MaxPool2d(2))
    step = ember.compile(lambda x, y: seq(x) + y.sum())
    for i in range(5):
        x = ember.linspace(-2, 2, 32).reshape(1, 2, 4, 4) * (i + 1)
        y = ember.randn(3)
        y0 = y.clone()
        want = seq(x.clone()) + y.sum()
        out = step(x, y)
        assert float(x.min()) == 0.0 and ember.equal(x, ember.relu(x)), i  # written in place as eager writes it
        assert ember.equal(y, y0) and ember.equal(out, want), i  # an input only read is left alone
    assert isinstance(step.cache[0].program, CudaGraphProgram) and graphs[0].replays == 3
