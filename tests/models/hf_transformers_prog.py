"""Hugging Face transformers BertModel and GPT2LMHeadModel, run by ``test_hf_transformers_on_ember.py`` twice: under
PyTorch (``save``: the weights go to safetensors files) and with ``torch`` aliased to Ember (``load``: the same
weights loaded). Each run saves what it computed: BERT's hidden states, gradients and the parameters after one
AdamW step; GPT-2's logits, loss, a gradient and a greedy ``generate``."""

import sys

import numpy as np
import safetensors.torch as st
import torch
import transformers
from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
ids = torch.tensor([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]])
mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
res = {}
torch.manual_seed(0)
bert = BertModel(
    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
).eval()
gpt = GPT2LMHeadModel(
    GPT2Config(vocab_size=50, n_positions=32, n_embd=16, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
).eval()
for name, m in (("bert", bert), ("gpt2", gpt)):
    if mode == "save":
        st.save_model(m, f"{out}/{name}.safetensors")
    else:
        st.load_model(m, f"{out}/{name}.safetensors")
h = bert(input_ids=ids, attention_mask=mask).last_hidden_state
res["bert_hidden"] = h.detach().numpy()
w = torch.linspace(-1.0, 1.0, h.numel()).reshape(h.shape)
(h * w).sum().backward()
opt = torch.optim.AdamW(bert.parameters(), lr=1e-2)
names = [n for n, p in bert.named_parameters()]
for n, p in bert.named_parameters():
    res["bert_grad." + n] = p.grad.numpy().copy() if p.grad is not None else np.array("none")
opt.step()
for n, p in bert.named_parameters():
    res["bert_step." + n] = p.detach().numpy().copy()
o = gpt(input_ids=ids, labels=ids)
res["gpt2_logits"] = o.logits.detach().numpy()
res["gpt2_loss"] = o.loss.detach().numpy()
o.loss.backward()
res["gpt2_grad_wte"] = gpt.transformer.wte.weight.grad.numpy().copy()
with torch.no_grad():
    gen = gpt.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False, pad_token_id=0)
res["gpt2_generate"] = gen.numpy()
np.savez(f"{out}/{mode}.npz", **res)
print("done")
