"""Errors that misled or were missing (issue 29): the same code under Ember and PyTorch, where PyTorch
refuses (or accepts) and Ember must do the same, naming what is wrong."""

import pytest

import ember

torch = pytest.importorskip("torch")
LIBS = [ember, torch]


def ids(lib):
    return lib.__name__


def _one_cycle(L):
    """One step per batch for total_steps batches: the last step() is allowed; one more is refused."""
    opt = L.optim.SGD([L.nn.Parameter(L.zeros(2))], lr=0.1, momentum=0.9)
    sched = L.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5)
    lrs = []
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    with pytest.raises(ValueError):
        sched.step()
    return lrs


def test_one_cycle_lr_accepts_its_last_step():
    assert _one_cycle(ember) == pytest.approx(_one_cycle(torch), rel=1e-12)


@pytest.mark.parametrize("L", LIBS, ids=ids)
def test_optimizer_given_a_tensor_not_a_list(L):
    m = L.nn.Linear(2, 3)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        L.optim.SGD(m.weight, lr=0.1)
    with pytest.raises(TypeError):
        L.optim.SGD({"params": [m.weight]}, lr=0.1)  # one group must be in a list too
    assert len(L.optim.SGD([m.weight], lr=0.1).param_groups[0]["params"]) == 1


def test_optimizer_error_names_the_fix():
    with pytest.raises(TypeError, match=r"got a single Param; wrap it in a list"):
        ember.optim.SGD(ember.nn.Linear(2, 3).weight, lr=0.1)


@pytest.mark.parametrize("L", LIBS, ids=ids)
def test_transformer_mask_of_the_wrong_shape_names_the_mask(L):
    model = L.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    src, tgt = L.zeros(5, 2, 8), L.zeros(4, 2, 8)
    with pytest.raises(RuntimeError, match=r"\(4, 4\)"):  # the expected shape
        model(src, tgt, tgt_mask=L.zeros(3, 3))
    with pytest.raises(RuntimeError, match=r"\(5, 5\)"):
        model(src, tgt, src_mask=L.zeros(4, 4))
    with pytest.raises(RuntimeError, match=r"\(4, 5\)"):
        model(src, tgt, memory_mask=L.zeros(4, 4))
    assert tuple(model(src, tgt, tgt_mask=L.nn.Transformer.generate_square_subsequent_mask(4)).shape) == (4, 2, 8)


def test_transformer_mask_errors_say_which_mask():
    model = ember.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    src, tgt = ember.zeros(5, 2, 8), ember.zeros(4, 2, 8)
    with pytest.raises(ValueError, match=r"^tgt_mask has shape \(3, 3\) but should be \(4, 4\)"):
        model(src, tgt, tgt_mask=ember.zeros(3, 3))
    with pytest.raises(ValueError, match=r"^memory_mask has shape"):
        model(src, tgt, memory_mask=ember.zeros(4, 4))
    with pytest.raises(ValueError, match=r"^tgt_key_padding_mask has shape \(4,\) but should be \(2, 4\)"):
        model(src, tgt, tgt_key_padding_mask=ember.zeros(4, dtype=ember.bool))
    attn = ember.nn.MultiheadAttention(8, 2, batch_first=True)
    q = ember.zeros(2, 3, 8)
    with pytest.raises(ValueError, match=r"^attn_mask has shape \(2, 2\) but should be \(3, 3\) or \(4, 3, 3\)"):
        attn(q, q, q, attn_mask=ember.zeros(2, 2))


def test_learner_fit_refuses_a_negative_epoch_count():
    model = ember.nn.Linear(2, 1)
    learner = ember.train.Learner(model, ember.optim.SGD(model.parameters(), lr=0.1), ember.nn.MSELoss(),
                                  progress=False)  # fmt: skip
    data = ember.data.DataLoader(ember.data.TensorDataset(ember.zeros(4, 2), ember.zeros(4, 1)), batch_size=2)
    for bad in (-2, 1.5, True):
        with pytest.raises(ValueError, match="epochs must be a non-negative integer"):
            learner.fit(data, epochs=bad)
    assert learner.fit(data, epochs=0) == []
    assert len(learner.fit(data, epochs=1)) == 1
