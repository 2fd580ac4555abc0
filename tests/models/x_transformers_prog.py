"""x-transformers, run by ``test_x_transformers_on_ember.py`` under PyTorch (``save``: the weights go to a
safetensors file) and with ``torch`` aliased to Ember (``load``: the same weights): a decoder-only language model
with rotary embeddings, its logits, loss and gradients, an AdamW step, and greedy generation through
``AutoregressiveWrapper``; an encoder (``Encoder``). (A padding mask goes through einx, which refuses the version
number Ember reports as ``torch.__version__``.) Each run saves what it computed."""

import sys

import numpy as np
import safetensors.torch as st
import torch
from x_transformers import AutoregressiveWrapper, Decoder, Encoder, TransformerWrapper

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
res = {}
torch.manual_seed(0)
dec = TransformerWrapper(num_tokens=50, max_seq_len=16,
                         attn_layers=Decoder(dim=16, depth=2, heads=2, rotary_pos_emb=True, ff_glu=True))  # fmt: skip
enc = TransformerWrapper(num_tokens=50, max_seq_len=16, attn_layers=Encoder(dim=16, depth=1, heads=2))
for name, m in (("dec", dec), ("enc", enc)):
    if mode == "save":
        st.save_model(m, f"{out}/{name}.safetensors")
    else:
        st.load_model(m, f"{out}/{name}.safetensors")
ids = torch.tensor([[1, 5, 9, 13, 2, 7, 30, 41], [3, 3, 8, 21, 44, 0, 17, 6]])
logits = dec(ids)
res["dec_logits"] = logits.detach().numpy()
loss = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:])
res["dec_loss"] = loss.detach().numpy()
loss.backward()
for n, p in dec.named_parameters():
    res["dec_grad." + n] = p.grad.numpy().copy() if p.grad is not None else np.array("none")
opt = torch.optim.AdamW(dec.parameters(), lr=1e-2)
opt.step()
for n, p in dec.named_parameters():
    res["dec_step." + n] = p.detach().numpy().copy()
dec.eval()
gen = AutoregressiveWrapper(dec).generate(ids[:, :3], 5, temperature=0.0)
res["generate"] = gen.numpy()
res["enc_out"] = enc.eval()(ids, return_embeddings=True).detach().numpy()
np.savez(f"{out}/{mode}.npz", **res)
print("done")
