"""``named_parameters``/``named_buffers``/``named_modules`` with a module registered twice, as torch lists them."""

import pytest

import ember.nn as enn

torch = pytest.importorskip("torch")


def _build(nn):
    m = nn.Module()
    m.a = nn.Linear(2, 3)
    m.b = nn.Sequential(nn.ReLU(), nn.BatchNorm1d(3))
    m.shared = m.a  # the same module under a second name
    m.again = m.b[1]
    return m


@pytest.mark.parametrize("remove_duplicate", [True, False])
@pytest.mark.parametrize("what", ["named_parameters", "named_buffers", "named_modules"])
def test_named_members_with_a_shared_module_as_torch(what, remove_duplicate):
    names = [[n for n, _ in getattr(_build(nn), what)(remove_duplicate=remove_duplicate)] for nn in (enn, torch.nn)]
    assert names[0] == names[1]
    if not remove_duplicate and what != "named_modules":
        assert any(n.startswith(("shared.", "again.")) for n in names[0])
