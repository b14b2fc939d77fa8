#!/usr/bin/python3
"""PyTorch CPU baseline for `kestrel bench step`: the ref7m model (vocab 8192,
d_model 256, 4 layers, 4 heads, SwiGLU 768, seq 256, batch 8, untied, RMSNorm,
RoPE θ 10000) trained on random tokens with torch.optim.AdamW, 2 threads.

Prints one JSON line in the format of `kestrel bench step --json`:
{"op":"step","preset":"ref7m-torch","tokens_per_sec":…,"mfu":…,"step_ms":…,"peak_rss_mb":…}

MFU uses the same FLOP count as kestrel (6·N_matmul + 12·L·T·d_attn per
token) and the same 2-core peak (336 GFLOP/s). Run it side by side with
kestrel in one session; the machine is noisy, so compare ratios only.

Usage: /usr/bin/python3 tools/torchref/bench_step.py [--steps 5] [--threads 2] [--batch 8]
"""
import argparse
import json
import math
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, D, L, H, KV, FF, T = 8192, 256, 4, 4, 4, 768, 256
HD = D // H


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def rotate_half(x):
    return torch.cat((-x[..., HD // 2:], x[..., :HD // 2]), dim=-1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(D), RMSNorm(D)
        self.q = nn.Linear(D, H * HD, bias=False)
        self.k = nn.Linear(D, KV * HD, bias=False)
        self.v = nn.Linear(D, KV * HD, bias=False)
        self.o = nn.Linear(H * HD, D, bias=False)
        self.gate = nn.Linear(D, FF, bias=False)
        self.up = nn.Linear(D, FF, bias=False)
        self.down = nn.Linear(FF, D, bias=False)

    def forward(self, x, cos, sin, mask):
        B = x.shape[0]
        h = self.n1(x)
        q = self.q(h).view(B, T, H, HD).transpose(1, 2)
        k = self.k(h).view(B, T, KV, HD).transpose(1, 2)
        v = self.v(h).view(B, T, KV, HD).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        s = s.masked_fill(mask, float("-inf"))
        a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * HD)
        x = x + self.o(a)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.norm = RMSNorm(D)
        self.lm = nn.Linear(D, V, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.trunc_normal_(p, std=0.02, a=-0.06, b=0.06)
        inv = 1.0 / (10000 ** (torch.arange(0, HD, 2).float() / HD))
        f = torch.outer(torch.arange(T).float(), inv)
        e = torch.cat((f, f), -1)
        self.register_buffer("cos", e.cos())
        self.register_buffer("sin", e.sin())
        self.register_buffer("mask", ~torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, idx, tgt):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x, self.cos, self.sin, self.mask)
        logits = self.lm(self.norm(x))
        return F.cross_entropy(logits.view(-1, V), tgt.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    m = Model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1)
    idx = torch.randint(0, V, (a.batch, T))
    tgt = torch.randint(0, V, (a.batch, T))
    times = []
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = m(idx, tgt)
        loss.backward()
        opt.step()
        el = time.perf_counter() - t0
        if s >= a.warmup:
            times.append(el)
    times.sort()
    med = times[len(times) // 2]
    tps = a.batch * T / med
    n_matmul = L * (D * (H + 2 * KV) * HD + H * HD * D + 3 * D * FF) + V * D
    fpt = 6 * n_matmul + 12 * L * T * H * HD
    peak = 336 if a.threads >= 2 else 197
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"op": "step", "preset": "ref7m-torch", "tokens_per_sec": round(tps, 3),
                      "mfu": round(tps * fpt / (peak * 1e9), 3), "step_ms": round(med * 1000, 3),
                      "peak_rss_mb": round(rss, 3), "threads": a.threads, "batch": a.batch,
                      "torch": torch.__version__, "loss_last": round(loss.item(), 3)}))


if __name__ == "__main__":
    main()
