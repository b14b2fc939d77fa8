#!/usr/bin/python3
"""PyTorch reference for kestrel's Muon (internal/optim/muon.go).

Writes internal/optim/testdata/muon_golden.json: for each case, the initial
parameters, the gradients and learning rate of every step, and the parameters
after every step, from torch in float32:

  * Muon (Moonlight's form) on the 2-D "matrix" tensors not excluded:
      B <- mu*B + G;  D = G + mu*B (Nesterov) or B;  O = NS5(D / (|D|_F + eps))
      W <- W*(1 - lr*wd) - lr*0.2*sqrt(max(m, n))*O
    NS5 with (a, b, c) = (3.4445, -4.7750, 2.0315) on the wide orientation.
  * torch.optim.AdamW on everything else (weight decay on "matrix" only).
  * gradient clipping by torch.nn.utils.clip_grad_norm_ before both.

Plus one Newton-Schulz output per shape for the unit test. Inputs come from
torch.manual_seed, so the script alone regenerates the file:

    /usr/bin/python3 tools/torchref/muon_ref.py
"""
import json
import math
import os
import sys

import torch

A, B, C = 3.4445, -4.7750, 2.0315


def newton_schulz(g, steps, eps):
    x = g.clone()
    tall = x.size(0) > x.size(1)
    if tall:
        x = x.T
    x = x / (x.norm() + eps)
    for _ in range(steps):
        a = x @ x.T
        b = B * a + C * (a @ a)
        x = A * x + b @ x
    if tall:
        x = x.T
    return x.contiguous()


def flat(ts):
    # %.9g round-trips float32 exactly and keeps the file small.
    return [float("%.9g" % v) for t in ts for v in t.detach().reshape(-1).tolist()]


def run_case(name, seed, mu, nesterov, ns_steps, wd, max_grad_norm, lrs, excluded):
    torch.manual_seed(seed)
    spec = [  # name, kind, shape
        ("embed_tokens.weight", "embedding", (12, 8)),
        ("layers.0.norm.weight", "norm", (8,)),
        ("layers.0.tall.weight", "matrix", (24, 8)),
        ("layers.0.wide.weight", "matrix", (8, 20)),
        ("layers.0.square.weight", "matrix", (12, 12)),
        ("lm_head.weight", "matrix", (16, 6)),
    ]
    params = [torch.nn.Parameter(torch.randn(*s, dtype=torch.float32) * 0.1) for _, _, s in spec]
    init = flat(params)
    muon = [i for i, (n, k, s) in enumerate(spec) if k == "matrix" and len(s) == 2 and n not in excluded]
    adam_decay = [params[i] for i, (n, k, s) in enumerate(spec) if i not in muon and k == "matrix"]
    adam_plain = [params[i] for i, (n, k, s) in enumerate(spec) if i not in muon and k != "matrix"]
    opt = torch.optim.AdamW([{"params": adam_decay, "weight_decay": wd},
                             {"params": adam_plain, "weight_decay": 0.0}],
                            lr=lrs[0], betas=(0.9, 0.99), eps=1e-8)
    bufs = {i: torch.zeros_like(params[i]) for i in muon}
    steps = []
    for lr in lrs:
        grads = [torch.randn_like(p) * 0.5 for p in params]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        with torch.no_grad():
            for i in muon:
                p, g = params[i], params[i].grad
                buf = bufs[i]
                buf.mul_(mu).add_(g)
                d = g.add(buf, alpha=mu) if nesterov else buf
                o = newton_schulz(d, ns_steps, 1e-7)
                p.mul_(1 - lr * wd)
                p.add_(o, alpha=-lr * 0.2 * math.sqrt(max(p.size(0), p.size(1))))
        for grp in opt.param_groups:
            grp["lr"] = lr
        opt.step()
        steps.append({"lr": lr, "grads": flat(grads), "params": flat(params)})
    return {
        "name": name, "momentum": mu, "nesterov": nesterov, "ns_steps": ns_steps,
        "weight_decay": wd, "max_grad_norm": max_grad_norm, "exclude": excluded,
        "tensors": [{"name": n, "kind": k, "shape": list(s)} for n, k, s in spec],
        "init": init, "steps": steps,
    }


def main():
    torch.set_num_threads(1)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "internal", "optim", "testdata", "muon_golden.json")
    cases = [
        run_case("nesterov", 7, 0.95, True, 5, 0.1, 1.0, [0.02, 0.02, 0.015, 0.01, 0.005], ["lm_head.weight"]),
        run_case("plain-momentum-clip", 11, 0.9, False, 5, 0.0, 0.3, [0.01, 0.03, 0.03, 0.02], ["lm_head.weight"]),
        run_case("head-muon-3ns", 13, 0.95, True, 3, 0.05, 10.0, [0.01, 0.01, 0.01], []),
    ]
    torch.manual_seed(3)
    ns = []
    for r, c in [(24, 8), (8, 20), (12, 12), (1, 9), (9, 1)]:
        g = torch.randn(r, c, dtype=torch.float32)
        ns.append({"rows": r, "cols": c, "in": flat([g]), "out": flat([newton_schulz(g, 5, 1e-7)])})
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases, "newton_schulz": ns}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
