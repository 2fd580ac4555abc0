"""The PyTorch-style example programs run end to end with tiny settings (in-process, a second or two each)."""

import math
import runpy
from pathlib import Path

import pytest

import ember

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _main(name):
    return runpy.run_path(str(EXAMPLES / name))["main"]


def test_digits_cnn_checkpoints_and_resume_exactly(tmp_path, capsys):
    main = _main("digits_cnn_checkpoint.py")
    tiny = ["--limit", "64", "--batch-size", "32", "--log-every", "0"]
    full = main([*tiny, "--epochs", "2", "--out", str(tmp_path / "a")])
    assert {p.name for p in (tmp_path / "a").iterdir()} == {"last.pt", "best.pt"}
    main([*tiny, "--epochs", "1", "--out", str(tmp_path / "b")])
    resumed = main([*tiny, "--epochs", "2", "--out", str(tmp_path / "b"), "--resume"])
    assert "resumed from" in capsys.readouterr().out
    assert resumed["history"] == full["history"]  # a resumed run is the uninterrupted run, bit for bit
    assert full["history"][-1]["train_loss"] < full["history"][0]["train_loss"]
    ckpt = ember.load(tmp_path / "a" / "last.pt")
    assert ckpt["epoch"] == 2 and {"state", "param_groups"} <= set(ckpt["optimizer_state_dict"])


def test_digits_cnn_with_compile_trains_exactly_as_without(tmp_path):
    pytest.importorskip("sklearn")
    main = _main("digits_cnn_checkpoint.py")
    tiny = ["--limit", "96", "--batch-size", "32", "--log-every", "0", "--epochs", "2"]
    plain = main([*tiny, "--out", str(tmp_path / "a")])
    compiled = main([*tiny, "--out", str(tmp_path / "b"), "--compile"])  # torch.compile(model) in PyTorch's examples
    assert compiled["history"] == plain["history"]


def test_char_lstm_trains_and_generates(tmp_path):
    out = _main("char_lstm.py")(["--epochs", "2", "--hidden", "16", "--layers", "1", "--emsize", "8", "--bptt", "10",
                                 "--generate", "20", "--save", str(tmp_path / "m.pt")])  # fmt: skip
    assert math.isfinite(out["valid_loss"]) and out["valid_loss"] < math.log(out["vocab"]) + 1
    assert len(out["sample"]) == 22 and out["sample"].startswith("It")
    assert (tmp_path / "m.pt").exists()


def test_reinforce_cartpole_runs_and_the_environment_is_the_classic_one():
    g = runpy.run_path(str(EXAMPLES / "reinforce_cartpole.py"))
    out = g["main"](["--episodes", "3", "--max-steps", "40", "--log-interval", "0"])
    assert out["episodes"] == 3 and out["running_reward"] > 0
    env = g["CartPole"](max_steps=1000, seed=0)
    env.reset()
    env.state = [0.0, 0.0, 0.0, 0.0]
    state, reward, done = env.step(1)  # a push right from rest: the cart accelerates right, the pole falls left
    assert reward == 1.0 and not done
    assert state[1] == pytest.approx(0.02 * 9.75609756, rel=1e-6) and state[3] < 0
    steps = 1
    while not done:
        _, _, done = env.step(1)
        steps += 1
    assert 5 < steps < 100  # always pushing right tips the pole over quickly


@pytest.mark.parametrize("name", ["linear_regression.py", "mlp.py", "cnn.py"])
def test_the_first_examples_explain_themselves_with_help(name, capsys):
    with pytest.raises(SystemExit) as e:
        _main(name)(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "--help" in out and "--seed" in out


def test_the_first_examples_run_with_tiny_settings(tmp_path, capsys):
    fit = _main("linear_regression.py")(["--steps", "60", "--samples", "200"])
    assert fit["loss"] < 0.1 and abs(fit["b"] - 4.2) < 0.3
    mlp = _main("mlp.py")(["--epochs", "2", "--save", str(tmp_path / "m.mpk")])
    assert mlp["accuracy"] > 0.5 and (tmp_path / "m.mpk").exists()
    history = _main("cnn.py")(["--epochs", "1", "--out", str(tmp_path / "cnn")])
    assert len(history) == 1 and (tmp_path / "cnn" / "config.json").exists()
    assert "resumed" not in capsys.readouterr().out


def test_gpt_on_a_stdlib_text_learns_and_samples():
    tiny = ["--steps", "40", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16"]
    out = _main("gpt_stdlib.py")([*tiny, "--batch-size", "8", "--eval-every", "0", "--generate", "12"])
    assert out["val"] < out["first_val"] and math.isfinite(out["val"])
    assert out["train"][-1] < out["train"][0] and len(out["sample"]) == 13


def test_gcn_on_a_sparse_graph_learns_the_communities():
    out = _main("gcn_sparse.py")(["--nodes", "120", "--epochs", "30", "--hidden", "8"])
    assert out["losses"][-1] < out["losses"][0] and out["test_accuracy"] > 0.6


def test_gpt_example_runs_step_for_step_like_pytorch():
    torch = pytest.importorskip("torch")
    import numpy as np

    build = runpy.run_path(str(EXAMPLES / "gpt_stdlib.py"))["build"]
    tm = build(torch, 20, 16, 2, 4, 32, 0.0)
    em = build(ember, 20, 16, 2, 4, 32, 0.0)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})

    def adamw(lib, m):
        decay = [p for p in m.parameters() if p.dim() >= 2]
        rest = [p for p in m.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
        return lib.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95))

    rng = np.random.default_rng(0)
    runs = [(torch, tm, adamw(torch, tm), []), (ember, em, adamw(ember, em), [])]
    for _ in range(8):
        x, y = rng.integers(0, 20, (4, 16)), rng.integers(0, 20, (4, 16))
        for lib, m, opt, losses in runs:
            loss = m(lib.tensor(x), lib.tensor(y))[1]
            opt.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(runs[1][3], runs[0][3], rtol=1e-5)
