"""Small torch modules that together use every kind of operator the PNNX rule maps (``nn.X``, ``F.x``,
``torch.x``, ``Tensor.x``) and every exception of its table; exported once per test session."""

from __future__ import annotations

from typing import Any


def models() -> dict[str, tuple[Any, tuple[Any, ...], str]]:
    """name -> (module in eval mode, example inputs, pnnx inputshape argument)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)

    class Layers(nn.Module):
        """``nn.X`` modules, including the exceptions (adaptive pools keeping a dim, LSTM, attention)."""

        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.lstm = nn.LSTM(4, 5, batch_first=True)
            self.gru = nn.GRU(4, 5, batch_first=True, bidirectional=True)
            self.rnn = nn.RNN(4, 3, num_layers=2)
            self.mha = nn.MultiheadAttention(4, 2, batch_first=True)
            self.rms = nn.RMSNorm(4)
            self.ap = nn.AdaptiveAvgPool2d((None, 2))
            self.amp = nn.AdaptiveMaxPool1d(3)
            self.lp = nn.LPPool2d(2, 2)
            self.lp1 = nn.LPPool1d(2, 2)
            self.cs = nn.ChannelShuffle(2)
            self.lrn = nn.LocalResponseNorm(3)
            self.up = nn.Upsample(scale_factor=1.5, mode="bicubic", recompute_scale_factor=True)
            self.upn = nn.UpsamplingNearest2d(scale_factor=2)
            self.upb = nn.UpsamplingBilinear2d(scale_factor=2)
            self.ct3 = nn.ConvTranspose3d(2, 2, 2)
            self.mp3 = nn.MaxPool3d(2)
            self.ap3 = nn.AvgPool3d(2, 1)
            self.in1 = nn.InstanceNorm1d(2, affine=True)
            self.in3 = nn.InstanceNorm3d(2)
            self.sm2 = nn.Softmax2d()
            self.rrelu = nn.RReLU()
            self.pad1 = nn.ReflectionPad1d(1)
            self.pad3 = nn.ReplicationPad3d(1)
            self.zpad = nn.ZeroPad1d((1, 2))
            self.cpad = nn.ConstantPad3d(1, 0.5)
            self.unfold = nn.Unfold(2)
            self.fold = nn.Fold((4, 4), 2)
            self.hs, self.ss, self.ts = nn.Hardshrink(0.3), nn.Softshrink(0.2), nn.Tanhshrink()
            self.th = nn.Threshold(0.1, 2.0)
            self.ps = nn.PixelShuffle(2)
            self.gn = nn.GroupNorm(1, 2)
            self.elu, self.celu, self.selu, self.glu = nn.ELU(0.5), nn.CELU(), nn.SELU(), nn.GLU(1)
            self.lsm, self.smin = nn.LogSoftmax(1), nn.Softmin(1)
            self.c1 = nn.Conv1d(2, 2, 3, padding=1, padding_mode="circular")

        def forward(self, x: Any, idx: Any) -> Any:
            e = self.emb(idx)
            a, _ = self.lstm(e)
            b, _ = self.gru(e)
            c, _ = self.rnn(e)
            m, _ = self.mha(e, e, e)
            x5 = x.unsqueeze(2).repeat(1, 1, 2, 1, 1)
            line = x.flatten(2)
            outs = [
                a,
                b,
                c,
                m,
                self.rms(e),
                self.ap(x),
                self.amp(line),
                self.lp(x),
                self.lp1(line),
                self.cs(x),
                self.lrn(x),
                self.up(x),
                self.upn(x),
                self.upb(x),
                self.mp3(self.ct3(x5)),
                self.ap3(x5),
                self.in1(line),
                self.in3(x5),
                self.sm2(x),
                self.rrelu(x),
                self.pad1(line),
                self.pad3(x5),
                self.zpad(line),
                self.cpad(x5),
                self.fold(self.unfold(x)),
                self.hs(x),
                self.ss(x),
                self.ts(x),
                self.th(x),
                self.ps(x.repeat(1, 2, 1, 1)),
                self.gn(x),
                self.elu(x),
                self.celu(x),
                self.selu(x),
                self.glu(x),
                self.lsm(x),
                self.smin(x),
                self.c1(line),
            ]
            return tuple(o.sum() for o in outs)

    class Functions(nn.Module):
        """``F.x``, ``torch.x`` and ``Tensor.x`` calls, and the expression forms (``expm1``, ``log1p``)."""

        def forward(self, x: Any, y: Any) -> Any:
            flat = x.flatten(1)
            theta = torch.tensor([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.0]]]).repeat(x.shape[0], 1, 1)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            outs = [
                torch.expm1(x) - 0.5 + torch.log1p(x.abs()),
                torch.ge(x, 0.1).float() + torch.ne(x, y).float() + torch.gt(x, y).float(),
                torch.le(x, 0.2).float() + torch.lt(x, y).float() + torch.eq(x, y).float(),
                torch.argmin(flat, 1).float(),
                torch.cumsum(x, 1),
                torch.logsumexp(x, 1, keepdim=True),
                torch.topk(flat, 3)[0],
                torch.gather(x, 1, torch.zeros(x.shape[0], 1, 4, 4, dtype=torch.long)),
                torch.tile(x, (1, 2, 1, 1)),
                torch.narrow(x, 1, 0, 1),
                torch.clamp(x, -0.5, 0.5),
                torch.baddbmm(flat.unsqueeze(1), flat.unsqueeze(1), torch.ones(x.shape[0], 32, 32)),
                F.grid_sample(x, grid, align_corners=False),
                F.pairwise_distance(flat, flat.flip(1)),
                F.rms_norm(x, (4,)),
                F.local_response_norm(x, 2),
                F.interpolate(x, scale_factor=2, mode="bicubic"),
                F.adaptive_avg_pool2d(x, (None, 2)),
                F.softmax(x, 1),
                F.log_softmax(x, 2),
                F.hardtanh(x, -0.2, 0.2),
                F.leaky_relu(x, 0.2),
                F.gelu(x, approximate="tanh"),
                F.silu(x),
                F.mish(x),
                F.softplus(x, 2.0),
                F.normalize(x, dim=1),
                F.layer_norm(x, (4,)),
                F.pad(x, (1, 1, 1, 0), mode="reflect"),
                F.max_pool2d(x, 2, return_indices=True)[0],
                F.avg_pool2d(x, 2, divisor_override=3),
                F.unfold(x, 2),
                F.pixel_unshuffle(x, 2),
                F.channel_shuffle(x, 2),
                F.celu(x),
                F.elu(x, 0.3),
                F.upsample_nearest(x, scale_factor=2),
                F.embedding(torch.tensor([[1, 2]]), flat.t()),
                x.permute(0, 2, 3, 1).contiguous(),
                x.transpose(2, 3),
                x.reshape(x.shape[0], -1),
                x.view(-1, 4),
                x.mean((2, 3)),
                x.sum(1, keepdim=True),
                x.amax(2),
                x.min(3)[0],
                x.max(),
                x.std(1),
                x.var(2),
                x.prod(3),
                x.norm(dim=1),
                x.exp(),
                x.sqrt().abs(),
                x.sin() * x.cos(),
                x.floor() + x.ceil(),
                x.round(),
                x.sign(),
                x.pow(2),
                x.roll(1, 2),
                x.flip(3),
                x.masked_fill(x > 0.5, 0.0),
                x.repeat_interleave(2, dim=1),
                torch.where(x > 0.3, x, y),
                torch.maximum(x, y),
                torch.minimum(x, y),
                torch.stack([x, y], 1),
                torch.cat([x, y], 2),
                torch.chunk(x, 2, 3)[1],
                torch.split(x, [1, 3], 2)[1],
                torch.unbind(x, 1)[0],
                torch.squeeze(x[:, :1], 1),
                torch.unsqueeze(x, 0),
                torch.flatten(x, 2),
                torch.matmul(x, y.transpose(2, 3)),
                torch.einsum("bchw,bcwk->bchk", x, y),
                x.tril(),
                x.triu(1),
                torch.sort(flat, 1)[0],
                torch.argsort(flat, 1).float(),
                torch.cummax(x, 2)[0],
                torch.masked_select(x, x > 0.5),
                torch.index_select(x, 2, torch.tensor([0, 2])),
                x.expand(2, -1, -1, -1),
                torch.diff(x, dim=3),
                torch.atan2(x, y + 1),
                torch.fmod(x, 0.3),
                torch.remainder(x, 0.3),
            ]
            return tuple(o.float().sum() for o in outs)

    class Scatters(nn.Module):
        """The writing variants of views (``*_scatter``, ``index_put`` from ``x[idx] = v``) and ``torch.clone``."""

        def forward(self, x: Any, y: Any) -> Any:
            c = x.clone()
            c[:, :, torch.tensor([0, 2])] = 5.0
            outs = [
                torch.slice_scatter(x, y[:, :, :2], dim=2, start=0, end=4, step=2),
                torch.select_scatter(x, y[:, 0], 1, 1),
                c,
                torch.diagonal_scatter(x, y[..., 0], 0, 2, 3),
                torch.index_put(x, (torch.tensor([0]), torch.tensor([1])), y[0, 0]),
                torch.narrow_copy(x, 3, 1, 2),
            ]
            return tuple(o.sum() for o in outs)

    return {
        "scatters": (Scatters().eval(), (torch.rand(1, 2, 4, 4), torch.rand(1, 2, 4, 4)), "[1,2,4,4]f32,[1,2,4,4]f32"),
        "layers": (Layers().eval(), (torch.rand(1, 2, 4, 4), torch.tensor([[1, 2, 3]])), "[1,2,4,4]f32,[1,3]i64"),
        "functions": (
            Functions().eval(),
            (torch.rand(1, 2, 4, 4), torch.rand(1, 2, 4, 4)),
            "[1,2,4,4]f32,[1,2,4,4]f32",
        ),
    }
