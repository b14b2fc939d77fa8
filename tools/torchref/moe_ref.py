#!/usr/bin/python3
"""PyTorch reference for kestrel's mixture-of-experts layers (internal/model/moe.go).

Reads golden_moe_<case>_in.json written by
    go test ./internal/model -run TestMoEGoldenTorch -write-golden-inputs
and writes golden_moe_<case>_out.json beside it: loss, z-loss, the MoE
auxiliary objective (balancing + router z-loss), the number of dropped
assignments, all logits and the full gradient of CE + z-loss + MoE aux.

The attention half of each block is ref.py's; the MoE block is written
independently of kestrel's dispatch: every expert runs on every token and a
0/1 mask of the kept assignments (capacity in token order, rank order
within a token) times the gate selects its share.

Usage: /usr/bin/python3 tools/torchref/moe_ref.py internal/model/testdata/golden_moe_*_in.json
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref  # noqa: E402  (rmsnorm, RoPE tables, objective)

torch.set_default_dtype(torch.float64)


def swiglu(h, P, q):
    g = h @ P[q + "gate_proj.weight"].T
    u = h @ P[q + "up_proj.weight"].T
    return (torch.nn.functional.silu(g) * u) @ P[q + "down_proj.weight"].T


def moe(cfg, P, p, h, stats):
    B, T, D = h.shape
    x = h.reshape(-1, D)
    N = x.shape[0]
    E, K = cfg["moe_experts"], cfg["moe_top_k"]
    z = x @ P[p + "mlp.gate.weight"].T  # N, E
    prob = torch.softmax(z, dim=-1)
    score = prob.detach()
    if cfg["moe_balance"] == "bias":
        score = score + P[p + "mlp.gate.e_score_correction_bias"].detach()
    sel = torch.topk(score, K, dim=-1).indices  # N, K, best first
    gates = prob.gather(1, sel)
    if cfg["moe_norm_topk"]:
        gates = gates / gates.sum(-1, keepdim=True)
    cf = cfg["moe_capacity_factor"]
    cap = math.ceil(cf * N * K / E) if cf > 0 else N
    used = [0] * E
    keep = torch.zeros(N, K)
    for t in range(N):
        for j in range(K):
            e = int(sel[t, j])
            if used[e] < cap:
                used[e] += 1
                keep[t, j] = 1
            else:
                stats["dropped"] += 1
    y = torch.zeros(N, D)
    for e in range(E):
        w = ((sel == e).double() * keep * gates).sum(-1)  # N: gate of e where kept
        y = y + w[:, None] * swiglu(x, P, f"{p}mlp.experts.{e}.")
    if cfg["moe_shared_expert"]:
        y = y + swiglu(x, P, p + "mlp.shared_expert.")
    f = torch.zeros(E)
    for e in range(E):
        f[e] = (sel == e).double().sum() / (N * K)
    bal = E * (f * prob.mean(0)).sum()
    lse = torch.logsumexp(z, dim=-1)
    stats["aux"] = stats["aux"] + cfg["moe_aux_loss_alpha"] * bal + cfg["moe_router_z_loss"] * (lse * lse).mean()
    return y.view(B, T, D)


def forward(cfg, P, batch, stats):
    # ref.forward with the MLP of MoE layers replaced; kept in step with it
    B, T = batch["B"], batch["T"]
    D, H, KV = cfg["d_model"], cfg["n_heads"], cfg["n_kv_heads"]
    hd = D // H
    eps = cfg["norm_eps"]
    inp = torch.tensor(batch["inputs"]).view(B, T)
    x = P["model.embed_tokens.weight"][inp]
    cos, sin = ref.rope_cos_sin(T, hd, cfg["rope_theta"])
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    mask = causal.expand(B, T, T)
    if cfg["doc_mask"] and batch.get("seg_ids") is not None:
        seg = torch.tensor(batch["seg_ids"]).view(B, T)
        mask = mask & (seg[:, :, None] == seg[:, None, :])
    for l in range(cfg["n_layers"]):
        p = f"model.layers.{l}."
        h = ref.rmsnorm(x, P[p + "input_layernorm.weight"], eps)
        q = (h @ P[p + "self_attn.q_proj.weight"].T).view(B, T, H, hd)
        k = (h @ P[p + "self_attn.k_proj.weight"].T).view(B, T, KV, hd)
        v = (h @ P[p + "self_attn.v_proj.weight"].T).view(B, T, KV, hd)
        if cfg["qk_norm"]:
            q = ref.rmsnorm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = ref.rmsnorm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        k_every = cfg["nope_every"]
        if k_every == 0 or (l + 1) % k_every != 0:
            q = q * cos + ref.rotate_half(q) * sin
            k = k * cos + ref.rotate_half(k) * sin
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(~mask[:, None, :, :], float("-inf"))
        a = torch.softmax(s, dim=-1) @ v
        a = a.transpose(1, 2).reshape(B, T, H * hd)
        x = x + a @ P[p + "self_attn.o_proj.weight"].T
        h = ref.rmsnorm(x, P[p + "post_attention_layernorm.weight"], eps)
        every = cfg["moe_every"]
        if every > 0 and (l + 1) % every == 0:
            x = x + moe(cfg, P, p, h, stats)
        else:
            x = x + swiglu(h, P, p + "mlp.")
    x = ref.rmsnorm(x, P["model.norm.weight"], eps)
    lm = P["model.embed_tokens.weight"] if cfg["tied_embeddings"] else P["lm_head.weight"]
    return x @ lm.T


def run(path):
    with open(path) as f:
        d = json.load(f)
    cfg = d["config"]
    flat = torch.tensor(d["params"], dtype=torch.float32).double()
    P = {}
    for t in d["tensors"]:
        P[t["name"]] = flat[t["offset"]:t["offset"] + t["size"]].view(*t["shape"]).clone().requires_grad_(True)
    stats = {"aux": torch.zeros(()), "dropped": 0}
    logits = forward(cfg, P, d, stats)
    loss, zl = ref.objective(cfg, logits, d)
    (loss + zl + stats["aux"]).backward()
    grads = torch.zeros(len(d["params"]))
    for t in d["tensors"]:
        g = P[t["name"]].grad
        if g is not None:
            grads[t["offset"]:t["offset"] + t["size"]] = g.reshape(-1)
    out = {
        "loss": loss.item(),
        "z_loss": zl.item(),
        "moe_aux": stats["aux"].item(),
        "dropped": stats["dropped"],
        "logits": [round(v, 9) for v in logits.detach().reshape(-1).tolist()],
        "grads": [float("%.9g" % v) for v in grads.tolist()],
    }
    dst = path.replace("_in.json", "_out.json")
    with open(dst, "w") as f:
        json.dump(out, f)
    print(f"{dst}: loss {out['loss']:.7f} moe_aux {out['moe_aux']:.6g} dropped {out['dropped']}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        run(p)
