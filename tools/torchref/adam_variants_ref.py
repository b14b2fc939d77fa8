#!/usr/bin/python3
"""PyTorch reference for kestrel's NAdamW and AdamC (internal/optim/nadamw.go,
adamw.go), beside AdamW itself.

Writes internal/optim/testdata/adam_variants_golden.json: for each case, the
initial parameters, the gradients and learning rate of every step, and the
parameters after every step, from torch in float32. Weight decay applies to
the "matrix" tensors only (kestrel's default decay_kinds); gradients are
clipped by torch.nn.utils.clip_grad_norm_ first.

  * adamw:  torch.optim.AdamW.
  * adamc:  torch.optim.AdamW whose group weight_decay is set to
            wd * lr_t / peak_lr before every step (Defazio 2025, "corrected"
            weight decay: the decay per step lr_t * wd_t follows lr_t^2 / peak).
  * nadamw: NAdam with decoupled weight decay written with torch ops, as
            PyTorch >= 2.1's torch.optim.NAdam(decoupled_weight_decay=True)
            does it. torch 1.13's NAdam cannot serve: its weight decay is L2
            (added to the gradient) and it multiplies mu_t twice into the
            product of mu_{t+1}'s coefficient (fixed in later releases).
            mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * psi)); the running product
            is kept as a Python float (kestrel keeps it in float64).

Inputs come from torch.manual_seed, so the script alone regenerates the file:

    /usr/bin/python3 tools/torchref/adam_variants_ref.py
"""
import json
import os
import sys

import torch

SPEC = [  # name, kind, shape
    ("embed_tokens.weight", "embedding", (12, 8)),
    ("layers.0.norm.weight", "norm", (8,)),
    ("layers.0.q.weight", "matrix", (24, 8)),
    ("layers.0.o.weight", "matrix", (8, 20)),
    ("lm_head.weight", "matrix", (16, 7)),
]


def flat(ts):
    # %.9g round-trips float32 exactly and keeps the file small.
    return [float("%.9g" % v) for t in ts for v in t.detach().reshape(-1).tolist()]


def nadamw_step(params, decays, state, lr, b1, b2, eps, wd, psi):
    state["t"] += 1
    t = state["t"]
    mu = b1 * (1.0 - 0.5 * 0.96 ** (t * psi))
    mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
    state["prod"] *= mu
    prod, prod_next = state["prod"], state["prod"] * mu_next
    bc2 = 1 - b2 ** t
    with torch.no_grad():
        for i, p in enumerate(params):
            g = p.grad
            m, v = state["m"][i], state["v"][i]
            if decays[i]:
                p.mul_(1 - lr * wd)
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v / bc2).sqrt().add_(eps)
            p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - prod))
            p.addcdiv_(m, denom, value=-lr * mu_next / (1.0 - prod_next))


def run_case(name, opt_name, seed, wd, max_grad_norm, lrs, peak, psi):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(*s, dtype=torch.float32) * 0.1) for _, _, s in SPEC]
    init = flat(params)
    decays = [k == "matrix" for _, k, _ in SPEC]
    b1, b2, eps = 0.9, 0.99, 1e-8
    opt = None
    if opt_name in ("adamw", "adamc"):
        opt = torch.optim.AdamW([{"params": [p for p, d in zip(params, decays) if d], "weight_decay": wd},
                                 {"params": [p for p, d in zip(params, decays) if not d], "weight_decay": 0.0}],
                                lr=lrs[0], betas=(b1, b2), eps=eps)
    state = {"t": 0, "prod": 1.0, "m": [torch.zeros_like(p) for p in params], "v": [torch.zeros_like(p) for p in params]}
    steps = []
    for lr in lrs:
        grads = [torch.randn_like(p) * 0.5 for p in params]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        if opt_name == "nadamw":
            nadamw_step(params, decays, state, lr, b1, b2, eps, wd, psi)
        else:
            opt.param_groups[0]["lr"] = opt.param_groups[1]["lr"] = lr
            opt.param_groups[0]["weight_decay"] = wd * lr / peak if opt_name == "adamc" else wd
            opt.step()
        steps.append({"lr": lr, "grads": flat(grads), "params": flat(params)})
    return {
        "name": name, "optimizer": opt_name, "weight_decay": wd, "max_grad_norm": max_grad_norm,
        "peak_lr": peak, "momentum_decay": psi,
        "tensors": [{"name": n, "kind": k, "shape": list(s)} for n, k, s in SPEC],
        "init": init, "steps": steps,
    }


def main():
    torch.set_num_threads(1)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "internal", "optim", "testdata", "adam_variants_golden.json")
    warm_decay = [0.002, 0.006, 0.01, 0.01, 0.008, 0.005, 0.002, 0.001]
    cases = [
        run_case("adamw", "adamw", 21, 0.1, 1.0, warm_decay, 0.01, 0.004),
        run_case("nadamw", "nadamw", 23, 0.1, 1.0, warm_decay, 0.01, 0.004),
        run_case("nadamw-fast-schedule-clip", "nadamw", 29, 0.05, 0.3, [0.01] * 6, 0.01, 0.5),
        run_case("adamc", "adamc", 31, 0.1, 1.0, warm_decay, 0.01, 0.004),
        run_case("adamc-strong-decay-clip", "adamc", 37, 2.0, 0.3, warm_decay, 0.01, 0.004),
    ]
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
