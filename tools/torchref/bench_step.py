#!/usr/bin/python3
"""PyTorch CPU baseline for `kestrel bench step`: the same Llama (RMSNorm,
rotate_half RoPE, GQA, SwiGLU, untied or tied lm_head) trained on random
tokens with torch.optim.AdamW, timed per step (zero_grad + forward + backward
+ step), median of --steps after --warmup.

The model is a preset that mirrors kestrel's (--preset ref7m, 30m, 124m) or
the [model] section of a kestrel run config (--config RUN.toml; micro-batch
train.micro_batch, else train.batch_size). Features the script does not model
(qk_norm, doc_mask, nope_every, z_loss) are refused, not ignored.

BLAS: Debian's torch 1.13 is built with BLAS_INFO=generic and calls whatever
libblas.so.3 points at; with the reference BLAS it is ~20x slower. The script
runs one matmul, reads /proc/self/maps and torch.__config__.show(), prints
which BLAS is loaded, and refuses to report a number unless it is OpenBLAS
(--allow-any-blas overrides, and the JSON then says so).

Prints one JSON line per thread count (--threads 1,2; each count runs in its
own process so peak_rss_mb, the process's VmHWM, is its own), in the format
of `kestrel bench step --json`:
{"op":"step","preset":"ref7m-torch","tokens_per_sec":...,"mfu":...,"step_ms":...,"peak_rss_mb":...,"blas":...}

MFU uses kestrel's FLOP count (6·N_matmul + 12·L·T·d_attn per token) and
kestrel's cached FMA peak for the same thread count (peak.json in
$KESTREL_CACHE_DIR or ~/.cache/kestrel, written by `kestrel bench peak`),
or --peak-gflops. Run it alternating with kestrel in one session; the
machine is shared and noisy, so compare ratios.

Usage: /usr/bin/python3 tools/torchref/bench_step.py [--preset ref7m | --config RUN.toml]
       [--threads 1,2] [--steps 5] [--warmup 1] [--batch N] [--peak-gflops G]
       [--precision fp32|bf16]

--precision bf16 runs the forward (and so its backward) under PyTorch's
bf16 autocast, parameters and AdamW in fp32: the anchor issue 36 compares
kestrel's bf16 step with. Autocast's bf16 products go to oneDNN (MKL-DNN),
not OpenBLAS; the JSON's "precision" says which ran.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import tomllib

PRESETS = {
    # name: (vocab, d_model, n_layers, n_heads, n_kv_heads, mlp_hidden, seq_len, tied, batch)
    "ref7m": (8192, 256, 4, 4, 4, 768, 256, False, 8),
    "30m": (8192, 512, 6, 8, 8, 1536, 256, False, 8),
    "124m": (50304, 768, 12, 12, 12, 2048, 256, True, 4),
}


def die(msg):
    print("bench_step.py: " + msg, file=sys.stderr)
    sys.exit(2)


def load_spec(a):
    """The model spec and batch from --preset or --config."""
    if a.config:
        try:
            with open(a.config, "rb") as f:
                cfg = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            die(f"{a.config}: {e}")
        m, t = cfg.get("model", {}), cfg.get("train", {})
        # kestrel's defaults for what the file leaves out (model.DefaultConfig, train.DefaultConfig)
        d = dict(vocab=256, d_model=128, n_layers=4, n_heads=4, n_kv_heads=4, mlp_hidden=384, seq_len=64,
                 rope_theta=10000.0, norm_eps=1e-5, tied_embeddings=False)
        d.update({k: v for k, v in m.items() if k in d})
        for k in ("qk_norm", "doc_mask"):
            if m.get(k):
                die(f"{a.config}: model.{k} = true is not modelled by this script")
        for k in ("nope_every", "z_loss"):
            if m.get(k):
                die(f"{a.config}: model.{k} = {m[k]} is not modelled by this script")
        batch = t.get("micro_batch") or t.get("batch_size") or 12
        name = "config:" + os.path.basename(a.config)
        return name, d, batch
    if a.preset not in PRESETS:
        die(f"unknown --preset {a.preset!r} (known: {', '.join(PRESETS)})")
    v, dm, nl, nh, kv, ff, t, tied, batch = PRESETS[a.preset]
    d = dict(vocab=v, d_model=dm, n_layers=nl, n_heads=nh, n_kv_heads=kv, mlp_hidden=ff, seq_len=t,
             rope_theta=10000.0, norm_eps=1e-5, tied_embeddings=tied)
    return a.preset, d, batch


def blas_in_use(torch):
    """Which BLAS library this process has loaded, after one matmul."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if "blas" in base.lower() or "mkl" in base.lower():
                libs.add(path)
    show = torch.__config__.show()
    info = re.findall(r"BLAS_INFO=\w+", show)
    if any("openblas" in p.lower() for p in libs):
        kind = "openblas"
    elif any("mkl" in p.lower() for p in libs) or "BLAS_INFO=mkl" in show:
        kind = "mkl"
    else:
        kind = "reference"
    return kind, sorted(libs), (info[0] if info else "")


def kestrel_peak(threads):
    """kestrel's cached FMA peak for this thread count (max over CPU keys), or None.
    The cache also holds bf16 peaks (impl "bf16 …", AMX ~15× the FMA): not these."""
    base = os.environ.get("KESTREL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kestrel")
    try:
        with open(os.path.join(base, "peak.json")) as f:
            peaks = json.load(f).get("peaks", {})
    except (OSError, ValueError):
        return None
    vals = [p["gflops"] for p in peaks.values() if p.get("key", {}).get("threads") == threads
            and not str(p.get("key", {}).get("impl", "")).startswith("bf16")]
    return max(vals) if vals else None


def vm_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_one(a, threads):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    name, s, batch = load_spec(a)
    if a.batch:
        batch = a.batch
    kind, libs, info = blas_in_use(torch)
    if kind != "openblas" and not a.allow_any_blas:
        die(f"torch is using the {kind} BLAS ({', '.join(libs) or 'no BLAS library mapped'}; {info}); "
            "install libopenblas0-pthread (update-alternatives --display libblas.so.3-x86_64-linux-gnu) "
            "or pass --allow-any-blas")
    V, D, L, H, KV, FF, T = (s["vocab"], s["d_model"], s["n_layers"], s["n_heads"], s["n_kv_heads"],
                             s["mlp_hidden"], s["seq_len"])
    HD = D // H
    eps = s["norm_eps"]

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.w

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
            if KV != H:
                k = k.repeat_interleave(H // KV, dim=1)
                v = v.repeat_interleave(H // KV, dim=1)
            sc = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
            sc = sc.masked_fill(mask, float("-inf"))
            att = (torch.softmax(sc, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * HD)
            x = x + self.o(att)
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, D)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.norm = RMSNorm(D)
            self.lm = nn.Linear(D, V, bias=False)
            if s["tied_embeddings"]:
                self.lm.weight = self.emb.weight
            for p in self.parameters():
                if p.dim() == 2:
                    nn.init.trunc_normal_(p, std=0.02, a=-0.06, b=0.06)
            inv = 1.0 / (s["rope_theta"] ** (torch.arange(0, HD, 2).float() / HD))
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

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    m = Model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1)
    idx = torch.randint(0, V, (batch, T))
    tgt = torch.randint(0, V, (batch, T))
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = m(idx, tgt)
        loss.backward()
        opt.step()
        el = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(el)
    times.sort()
    med = times[len(times) // 2]
    tps = batch * T / med
    d_attn = H * HD
    n_matmul = L * (D * (H + 2 * KV) * HD + d_attn * D + 3 * D * FF) + V * D
    fpt = 6 * n_matmul + 12 * L * T * d_attn
    peak, src = (a.peak_gflops, "configured") if a.peak_gflops else (kestrel_peak(threads), "kestrel-cache")
    out = {"op": "step", "preset": name + "-torch", "tokens_per_sec": round(tps, 3),
           "mfu": round(tps * fpt / (peak * 1e9), 3) if peak else None, "step_ms": round(med * 1000, 3),
           "peak_rss_mb": round(vm_hwm_mb(), 3), "threads": threads, "precision": a.precision, "batch": batch, "seq": T,
           "flops_per_token": fpt, "peak_gflops": round(peak, 3) if peak else None, "peak_source": src if peak else "none",
           "torch": torch.__version__, "blas": kind, "blas_libs": libs, "blas_info": info,
           "loss_last": round(loss.item(), 3)}
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="ref7m", help="ref7m, 30m or 124m (as kestrel bench step)")
    ap.add_argument("--config", help="a kestrel run config (TOML) whose [model] and micro-batch to time")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", default="1", help="thread counts, e.g. 1,2 (each in its own process)")
    ap.add_argument("--batch", type=int, default=0, help="sequences per step (0 = the preset's or config's)")
    ap.add_argument("--peak-gflops", type=float, default=0, help="peak for MFU (0 = kestrel's cached peak)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                    help="bf16: forward under torch.autocast('cpu', dtype=torch.bfloat16) (as kestrel's --precision bf16); "
                         "MFU still divides by the fp32 FMA peak")
    ap.add_argument("--allow-any-blas", action="store_true", help="report even when torch is not on OpenBLAS")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    try:
        threads = [int(t) for t in a.threads.split(",") if t.strip()]
    except ValueError:
        die(f"--threads {a.threads!r}: want comma-separated integers")
    if not threads or min(threads) < 1 or a.steps < 1:
        die("--threads must be >= 1 and --steps >= 1")
    load_spec(a)  # refuse a bad preset or config before timing anything
    if a.one or len(threads) == 1:
        run_one(a, threads[0])
        return
    for t in threads:
        args = [x for x in sys.argv[1:]]
        # each count in its own process: its own VmHWM and thread pools
        i = args.index("--threads") if "--threads" in args else -1
        if i >= 0:
            del args[i:i + 2]
        args = [a2 for a2 in args if not a2.startswith("--threads=")]
        r = subprocess.run([sys.executable, sys.argv[0], *args, "--threads", str(t), "--one"])
        if r.returncode != 0:
            sys.exit(r.returncode)


if __name__ == "__main__":
    main()
