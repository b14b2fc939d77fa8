#!/usr/bin/python3
"""Independent PyTorch scorer for kestrel eval (issue 16).

Builds the model from a checkpoint directory's config.json (Hugging Face
Llama/Qwen3 keys) and model.safetensors alone, rescores every request that
`kestrel eval --dump FILE` wrote (the token window, the number of scored
continuation tokens, the continuation's bytes, kestrel's log-probability),
and compares item by item: the answer chosen by acc and by acc_norm, the
accuracies, and the largest log-probability difference.

    kestrel eval --run RUN --tasks hellaswag,piqa --dump /tmp/req.jsonl
    /usr/bin/python3 tools/torchref/eval_ref.py RUN/checkpoints/step-N /tmp/req.jsonl [--dtype float64] [--out scores.json]

The forward pass is ref.py's (plain torch ops, HF semantics); only the
scored positions go through lm_head. Needs Debian's python3-torch; CI runs
the committed goldens instead (internal/eval/testdata, TestTorchGoldens).
"""
import argparse
import json
import math
import os
import struct
import sys
import time
from collections import defaultdict

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref  # noqa: E402  (sets the default dtype to float64)


def load_safetensors(path, dtype):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {t['dtype']}, want F32")
        a, b = t["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).view(*t["shape"]).to(dtype)
    return out


def model_config(path, P):
    with open(path) as f:
        hf = json.load(f)
    arch = (hf.get("architectures") or [""])[0]
    if arch not in ("LlamaForCausalLM", "Qwen3ForCausalLM"):
        sys.exit(f"{path}: architecture {arch!r}: want LlamaForCausalLM or Qwen3ForCausalLM")
    D, H = hf["hidden_size"], hf["num_attention_heads"]
    if hf.get("head_dim", D // H) != D // H:
        sys.exit(f"{path}: head_dim {hf['head_dim']} != hidden_size/num_attention_heads")
    return {
        "d_model": D, "n_heads": H, "n_kv_heads": hf.get("num_key_value_heads", H),
        "n_layers": hf["num_hidden_layers"], "norm_eps": hf["rms_norm_eps"],
        "rope_theta": hf.get("rope_theta", 10000.0),
        "qk_norm": "model.layers.0.self_attn.q_norm.weight" in P,
        "tied_embeddings": hf.get("tie_word_embeddings", "lm_head.weight" not in P),
        # kestrel-only keys, absent in exported HF configs: RoPE everywhere
        "nope_every": hf.get("kestrel_nope_every", 0), "doc_mask": False,
    }


def score(cfg, P, reqs, batch):
    """Summed log-probability of each request's last `cont` tokens."""
    lm = P["model.embed_tokens.weight"] if cfg["tied_embeddings"] else P["lm_head.weight"]
    order = sorted(range(len(reqs)), key=lambda i: -len(reqs[i]["tokens"]))
    out = [0.0] * len(reqs)
    with torch.no_grad():
        for lo in range(0, len(order), batch):
            idx = order[lo:lo + batch]
            T = max(len(reqs[i]["tokens"]) - 1 for i in idx)
            inputs = torch.zeros(len(idx), T, dtype=torch.int64)
            for r, i in enumerate(idx):
                t = reqs[i]["tokens"][:-1]
                inputs[r, :len(t)] = torch.tensor(t)
            x = ref.body(cfg, P, {"B": len(idx), "T": T, "inputs": inputs.reshape(-1).tolist()})
            for r, i in enumerate(idx):
                toks, c = reqs[i]["tokens"], reqs[i]["cont"]
                n = len(toks) - 1
                z = x[r, n - c:n] @ lm.T  # c × V
                tgt = torch.tensor(toks[n - c + 1:n + 1])
                lp = z.gather(1, tgt[:, None])[:, 0] - torch.logsumexp(z, dim=-1)
                out[i] = lp.sum().item()
    return out


def pick(lps, nbytes):
    acc = max(range(len(lps)), key=lambda j: (lps[j], -j))
    accn = max(range(len(lps)), key=lambda j: (lps[j] / max(nbytes[j], 1), -j))
    return acc, accn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("requests")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", help="write the per-request log-probabilities here (JSON)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)
    torch.set_default_dtype(dtype)
    P = load_safetensors(os.path.join(a.checkpoint, "model.safetensors"), dtype)
    cfg = model_config(os.path.join(a.checkpoint, "config.json"), P)
    with open(a.requests) as f:
        reqs = [json.loads(l) for l in f if l.strip()]
    t0 = time.time()
    lps = score(cfg, P, reqs, a.batch)
    secs = time.time() - t0
    items = defaultdict(list)
    for r, lp in zip(reqs, lps):
        items[(r["task"], r["item"])].append((r["choice"], r, lp))
    per_task = defaultdict(lambda: {"n": 0, "acc_same": 0, "accn_same": 0, "k_acc": 0, "k_accn": 0, "t_acc": 0, "t_accn": 0})
    maxdiff = 0.0
    for (task, _), chs in sorted(items.items()):
        chs.sort(key=lambda c: c[0])
        kl = [c[1]["logprob"] for c in chs]
        tl = [c[2] for c in chs]
        nb = [c[1]["bytes"] for c in chs]
        label = chs[0][1]["label"]
        maxdiff = max(maxdiff, max(abs(x - y) for x, y in zip(kl, tl)))
        ka, kn = pick(kl, nb)
        ta, tn = pick(tl, nb)
        s = per_task[task]
        s["n"] += 1
        s["acc_same"] += ka == ta
        s["accn_same"] += kn == tn
        s["k_acc"] += ka == label
        s["k_accn"] += kn == label
        s["t_acc"] += ta == label
        s["t_accn"] += tn == label
    print(f"torch {torch.__version__} {a.dtype}, {len(reqs)} requests in {secs:.1f} s; max |logprob difference| {maxdiff:.3g}")
    for task, s in per_task.items():
        n = s["n"]
        print(f"{task}: n={n}  same answer acc {s['acc_same']}/{n} ({s['acc_same']/n:.4%}), acc_norm {s['accn_same']}/{n} ({s['accn_same']/n:.4%})"
              f"  |  acc kestrel {s['k_acc']/n:.4f} torch {s['t_acc']/n:.4f}  |  acc_norm kestrel {s['k_accn']/n:.4f} torch {s['t_accn']/n:.4f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"torch": torch.__version__, "dtype": a.dtype, "logprobs": lps}, f)


if __name__ == "__main__":
    main()
