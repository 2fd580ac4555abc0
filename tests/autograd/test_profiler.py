"""``ember.profiler`` / ``ember.autograd.profiler``: PyTorch's profiling API over Ember's operators and backward
nodes (host times), its schedules checked step for step against ``torch.profiler.schedule``."""

from __future__ import annotations

import contextlib
import gzip
import json
import warnings

import numpy as np
import pytest

import ember
from ember.autograd._engine import PROFILE
from ember.autograd._function import TRACE
from ember.profiler import ProfilerAction, profile, record_function, schedule, tensorboard_trace_handler


def _step(model, opt, x):
    with record_function("forward"):
        loss = model(x).relu().sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def _model():
    ember.manual_seed(0)
    m = ember.nn.Linear(8, 4)
    return m, ember.optim.SGD(m.parameters(), lr=0.1)


@pytest.mark.parametrize(
    "kw",
    [dict(wait=1, warmup=1, active=2), dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
     dict(wait=2, warmup=1, active=1, skip_first_wait=1), dict(wait=0, warmup=0, active=3, repeat=1)],
)  # fmt: skip
def test_schedules_step_for_step_as_torch(kw):
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning) if kw["warmup"] == 0 else contextlib.nullcontext():
        ours = schedule(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.profiler.schedule(**kw)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]
    with pytest.raises(ValueError):
        schedule(wait=0, warmup=0, active=0)


def test_a_profiled_step_lists_operators_backward_nodes_and_ranges():
    m, opt = _model()
    x = ember.randn(5, 8)
    with profile(record_shapes=True, profile_memory=True) as prof:
        for _ in range(3):
            _step(m, opt, x)
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["forward"].count == 3 and rows["forward"].is_user_annotation
    assert rows["Linear"].count == 3 and rows["ReluBackward0"].count == 3
    assert rows["forward"].cpu_time_total >= rows["Linear"].cpu_time_total
    assert rows["forward"].self_cpu_time_total < rows["forward"].cpu_time_total
    assert rows["Linear"].cpu_memory_usage == 3 * 5 * 4 * 4  # each call's (5, 4) float32 output
    shaped = {(r.key, str(r.input_shapes)) for r in prof.key_averages(group_by_input_shape=True)}
    assert ("Linear", "[[5, 8], [4, 8], [4]]") in shaped
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    assert "Self CPU %" in table and "# of Calls" in table and "Self CPU time total" in table
    assert len([ln for ln in table.splitlines() if ln.strip() and not ln.startswith("-")]) == 1 + 5 + 1
    assert "cuda_time_total" and prof.key_averages().table(sort_by="cuda_time_total")
    with pytest.raises(ValueError, match="cannot sort by"):
        prof.key_averages().table(sort_by="nonsense")
    assert TRACE[0] is None and PROFILE[0] is None


def test_results_are_the_same_with_and_without_the_profiler():
    m1, o1 = _model()
    m2, o2 = _model()
    x = ember.randn(5, 8)
    a = _step(m1, o1, x)
    with profile():
        b = _step(m2, o2, x)
    assert a.item() == b.item()
    assert np.array_equal(m1.weight.detach().numpy(), m2.weight.detach().numpy())


def test_a_schedule_records_the_active_steps_and_hands_each_cycle_over(tmp_path):
    m, opt = _model()
    x = ember.randn(5, 8)
    seen = []
    handler = tensorboard_trace_handler(str(tmp_path), worker_name="w")

    def ready(p):
        seen.append(sorted(r.key for r in p.key_averages() if r.key.startswith("ProfilerStep")))
        handler(p)

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for _ in range(9):
            _step(m, opt, x)
            prof.step()
    assert seen == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    assert prof.current_action is ProfilerAction.NONE
    files = sorted(tmp_path.glob("w.*.pt.trace.json"))
    assert len(files) == 2
    events = json.loads(files[0].read_text())["traceEvents"]
    assert {"Linear", "forward", "ReluBackward0"} <= {e["name"] for e in events}
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    tensorboard_trace_handler(str(tmp_path / "gz"), use_gzip=True)(prof)
    (gz,) = (tmp_path / "gz").glob("*.pt.trace.json.gz")
    assert json.loads(gzip.decompress(gz.read_bytes()))["traceEvents"]


def test_one_profile_at_a_time_and_hooks_removed_on_errors():
    with pytest.raises(ZeroDivisionError), profile():
        ember.ones(2) * 2
        1 / 0
    assert TRACE[0] is None and PROFILE[0] is None
    with profile(), pytest.raises(RuntimeError, match="already intercepted"), profile():
        pass
    assert TRACE[0] is None


def test_the_autograd_profiler_form():
    from ember.autograd import profiler

    x = ember.randn(4, 4, requires_grad=True)
    with profiler.profile(record_shapes=True) as prof, profiler.record_function("mine"):
        (x @ x).sum().backward()
    assert prof.self_cpu_time_total > 0
    names = {e.name for e in prof.function_events}
    assert {"mine", "MatMul", "MatMulBackward0"} <= names
    assert "MatMul" in prof.table(sort_by="cpu_time_total")
    with profiler.profile(enabled=False) as off:
        x * 2
    assert len(off.function_events or []) == 0
