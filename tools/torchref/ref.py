#!/usr/bin/python3
"""PyTorch reference for kestrel's transformer (internal/model).

Reads golden_<case>_in.json written by
    go test ./internal/model -run TestGoldenTorch -write-golden-inputs
(config, batch, flat float32 parameters and their named views), builds the
same Llama/Qwen3-style model in float64 with plain torch ops, runs forward and
autograd backward, and writes golden_<case>_out.json beside it: loss, z-loss,
all logits and the full gradient (aligned with the flat parameter buffer).

Usage: /usr/bin/python3 tools/torchref/ref.py internal/model/testdata/golden_*_in.json
Needs Debian's python3-torch; CI does not run it (the outputs are committed).
"""
import json
import math
import sys

import torch

torch.set_default_dtype(torch.float64)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_cos_sin(T, hd, theta):
    # as Hugging Face Llama: inv_freq in float32, angles t*inv_freq
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    t = torch.arange(T, dtype=torch.float32)
    freqs = torch.outer(t, inv.float())
    emb = torch.cat((freqs, freqs), dim=-1).to(torch.get_default_dtype())
    return emb.cos(), emb.sin()


def forward(cfg, P, batch):
    lm = P["model.embed_tokens.weight"] if cfg["tied_embeddings"] else P["lm_head.weight"]
    return body(cfg, P, batch) @ lm.T  # B, T, V


def body(cfg, P, batch):
    """The residual stream after the final norm, B×T×D (the input of lm_head)."""
    B, T = batch["B"], batch["T"]
    D, H, KV = cfg["d_model"], cfg["n_heads"], cfg["n_kv_heads"]
    hd = D // H
    eps = cfg["norm_eps"]
    inp = torch.tensor(batch["inputs"]).view(B, T)
    x = P["model.embed_tokens.weight"][inp]
    cos, sin = rope_cos_sin(T, hd, cfg["rope_theta"])
    # mask[b, t, j]: j <= t and (no doc mask or same segment)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    mask = causal.expand(B, T, T)
    if cfg["doc_mask"] and batch.get("seg_ids") is not None:
        seg = torch.tensor(batch["seg_ids"]).view(B, T)
        mask = mask & (seg[:, :, None] == seg[:, None, :])
    for l in range(cfg["n_layers"]):
        p = f"model.layers.{l}."
        h = rmsnorm(x, P[p + "input_layernorm.weight"], eps)
        q = (h @ P[p + "self_attn.q_proj.weight"].T).view(B, T, H, hd)
        k = (h @ P[p + "self_attn.k_proj.weight"].T).view(B, T, KV, hd)
        v = (h @ P[p + "self_attn.v_proj.weight"].T).view(B, T, KV, hd)
        if cfg["qk_norm"]:
            q = rmsnorm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # B, heads, T, hd
        k_every = cfg["nope_every"]
        if k_every == 0 or (l + 1) % k_every != 0:
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(~mask[:, None, :, :], float("-inf"))
        a = torch.softmax(s, dim=-1) @ v
        a = a.transpose(1, 2).reshape(B, T, H * hd)
        x = x + a @ P[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, P[p + "post_attention_layernorm.weight"], eps)
        g = h @ P[p + "mlp.gate_proj.weight"].T
        u = h @ P[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ P[p + "mlp.down_proj.weight"].T
    return rmsnorm(x, P["model.norm.weight"], eps)


def objective(cfg, logits, batch):
    V = cfg["vocab"]
    z = logits.reshape(-1, V)
    tgt = torch.tensor(batch["targets"])
    w = torch.ones(len(tgt)) if batch.get("mask") is None else torch.tensor(batch["mask"], dtype=torch.float64)
    w = torch.where(tgt < 0, torch.zeros_like(w), w)
    lse = torch.logsumexp(z, dim=-1)
    zt = z.gather(1, tgt.clamp(min=0)[:, None])[:, 0]
    ce = lse - zt
    wsum = w.sum()
    loss = (w * ce).sum() / wsum
    zl = cfg["z_loss"] * (w * lse * lse).sum() / wsum
    return loss, zl


def run(path):
    with open(path) as f:
        d = json.load(f)
    cfg = d["config"]
    flat = torch.tensor(d["params"], dtype=torch.float32).double()
    P = {}
    for t in d["tensors"]:
        P[t["name"]] = flat[t["offset"]:t["offset"] + t["size"]].view(*t["shape"]).clone().requires_grad_(True)
    logits = forward(cfg, P, d)
    loss, zl = objective(cfg, logits, d)
    (loss + zl).backward()
    grads = torch.zeros(len(d["params"]))
    for t in d["tensors"]:
        grads[t["offset"]:t["offset"] + t["size"]] = P[t["name"]].grad.reshape(-1)
    out = {
        "loss": loss.item(),
        "z_loss": zl.item(),
        "logits": [round(v, 9) for v in logits.detach().reshape(-1).tolist()],
        "grads": [float("%.9g" % v) for v in grads.tolist()],
    }
    dst = path.replace("_in.json", "_out.json")
    with open(dst, "w") as f:
        json.dump(out, f)
    print(f"{dst}: loss {out['loss']:.7f} z_loss {out['z_loss']:.3g}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        run(p)
