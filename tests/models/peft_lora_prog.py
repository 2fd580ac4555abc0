"""PEFT LoRA on Hugging Face models, run by ``test_peft_on_ember.py`` twice: under PyTorch (``save``: the base and
LoRA weights go to safetensors files, the trained adapter to ``save_pretrained``) and with ``torch`` aliased to
Ember (``load``: the same weights loaded, PyTorch's adapter loaded by ``PeftModel.from_pretrained``). Each run saves
what it computed: losses, LoRA gradients and parameters through AdamW steps, logits after ``merge_and_unload``."""

import sys

import numpy as np
import safetensors.torch as st
import torch
import transformers
from peft import LoraConfig, PeftModel, TaskType, get_peft_model
from transformers import BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
ids = torch.tensor([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]])
mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
res = {}


def sync(m, name):
    """The same weights in both runs: PyTorch's saved, then loaded by Ember."""
    if mode == "save":
        st.save_model(m, f"{out}/{name}.safetensors")
    else:
        st.load_model(m, f"{out}/{name}.safetensors")


def train(name, pm, loss_fn, steps=3):
    opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=2e-2)
    losses = []
    for i in range(steps):
        loss = loss_fn()
        loss.backward()
        if i == 0:
            for n, p in pm.named_parameters():
                if p.requires_grad:
                    res[f"{name}_grad.{n}"] = p.grad.numpy().copy()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    res[f"{name}_losses"] = np.array(losses)
    for n, p in pm.named_parameters():
        if p.requires_grad:
            res[f"{name}_param.{n}"] = p.detach().numpy().copy()


gcfg = GPT2Config(vocab_size=50, n_positions=32, n_embd=16, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
torch.manual_seed(0)
gpt = GPT2LMHeadModel(gcfg).eval()
sync(gpt, "gpt2")
lcfg = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "c_fc"], lora_dropout=0.0, fan_in_fan_out=True)
pm = get_peft_model(gpt, lcfg)
sync(pm, "gpt2_lora")  # lora_A is drawn at random: PyTorch's values
trainable, total = pm.get_nb_trainable_parameters()
res["gpt2_counts"] = np.array([trainable, total])
train("gpt2", pm, lambda: pm(input_ids=ids, labels=ids).loss)
with torch.no_grad():
    res["gpt2_peft_logits"] = pm(input_ids=ids).logits.numpy()
if mode == "save":
    pm.save_pretrained(f"{out}/gpt2_adapter")
merged = pm.merge_and_unload()
res["gpt2_merged_type"] = np.array(type(merged.transformer.h[0].attn.c_attn).__name__)
res["gpt2_merged_c_attn"] = merged.transformer.h[0].attn.c_attn.weight.detach().numpy()
with torch.no_grad():
    res["gpt2_merged_logits"] = merged(input_ids=ids).logits.numpy()
# PyTorch's trained adapter (save_pretrained's adapter_model.safetensors) on a fresh base model
torch.manual_seed(1)
base = GPT2LMHeadModel(gcfg).eval()
sync(base, "gpt2_base2")
loaded = PeftModel.from_pretrained(base, f"{out}/gpt2_adapter")
with torch.no_grad():
    res["gpt2_loaded_logits"] = loaded(input_ids=ids).logits.numpy()

# BERT sequence classification: LoRA on query/value, the new classifier head trained in full (modules_to_save)
torch.manual_seed(0)
bert = BertForSequenceClassification(
    BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=3)
)  # fmt: skip
sync(bert, "bert")
bcfg = LoraConfig(task_type=TaskType.SEQ_CLS, r=2, lora_alpha=4, target_modules=["query", "value"], lora_dropout=0.0)
pb = get_peft_model(bert, bcfg)
sync(pb, "bert_lora")
labels = torch.tensor([0, 2])
train("bert", pb, lambda: pb(input_ids=ids, attention_mask=mask, labels=labels).loss)
pb.eval()
with torch.no_grad():
    res["bert_peft_logits"] = pb(input_ids=ids, attention_mask=mask).logits.numpy()
    res["bert_merged_logits"] = pb.merge_and_unload()(input_ids=ids, attention_mask=mask).logits.numpy()
np.savez(f"{out}/{mode}.npz", **res)
print("done")
