"""pytorch/examples' time_sequence_prediction: two ``nn.LSTMCell`` (1->51, 51->51) and ``Linear(51, 1)`` unrolled
over sine waves (float64), trained with ``LBFGS(lr=0.8)`` and a closure: ms per closure (forward over the
sequence, MSE loss, backward through every step).

Sizes: the original's 97 training sequences, each cut to its first ``STEPS`` = 100 steps (the original unrolls
999: 10 s per closure in PyTorch on this 2-core machine, too long for paired whole-process runs).

Each timed step is one ``optimizer.step(closure)`` with ``max_iter=1`` (the original's default of 20 closure
calls per step would make one step ~20 s here), so a step evaluates the closure exactly once and then runs one
L-BFGS update from the history kept across steps.
"""

from typing import Any

import numpy as np
from _harness import framework, parse, report

T, L, N = 20, 1000, 100  # the example's generate_sine_wave.py
STEPS = 100


def sine_data() -> np.ndarray:
    rs = np.random.RandomState(2)
    x = np.empty((N, L), "int64")
    x[:] = np.array(range(L)) + rs.randint(-4 * T, 4 * T, N).reshape(N, 1)
    return np.sin(x / 1.0 / T).astype("float64")


def time_sequence_step(args: Any) -> Any:
    lib = framework(args)
    lib.manual_seed(0)
    nn = lib.nn

    class Sequence(nn.Module):  # the example's model, as written there
        def __init__(self) -> None:
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, 51)
            self.lstm2 = nn.LSTMCell(51, 51)
            self.linear = nn.Linear(51, 1)

        def forward(self, input: Any) -> Any:
            outputs = []
            h_t = lib.zeros(input.size(0), 51, dtype=lib.double)
            c_t = lib.zeros(input.size(0), 51, dtype=lib.double)
            h_t2 = lib.zeros(input.size(0), 51, dtype=lib.double)
            c_t2 = lib.zeros(input.size(0), 51, dtype=lib.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                outputs += [self.linear(h_t2)]
            return lib.cat(outputs, dim=1)

    data = sine_data()
    input, target = lib.tensor(data[3:, :STEPS]), lib.tensor(data[3:, 1 : STEPS + 1])
    seq = Sequence().double()
    criterion = nn.MSELoss()
    optimizer = lib.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=1)

    def closure() -> Any:
        optimizer.zero_grad()
        loss = criterion(seq(input), target)
        loss.backward()
        return loss

    def step() -> None:
        optimizer.step(closure)

    return step


if __name__ == "__main__":
    args = parse("rnn_time_sequence")
    report("rnn_time_sequence", args, time_sequence_step(args), unit="ms", per_step=1)
