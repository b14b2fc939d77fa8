#!/usr/bin/python3
"""Independent forward pass of an exported Hugging Face directory.

Builds a LlamaForCausalLM / Qwen3ForCausalLM forward pass from config.json
alone (the semantics of those classes, written with plain torch ops: the
transformers package is not needed) and model.safetensors (read with a small
parser: the safetensors package is not needed either), then writes the
per-token log-probability of each next token:

    /usr/bin/python3 tools/torchref/hf_forward.py DIR IDS.json OUT.json [--dtype float64]
    /usr/bin/python3 tools/torchref/hf_forward.py DIR --score SCORE.json [--dtype float64]

IDS.json is {"ids": [[...], ...]} (one list of token ids per sequence) or a
plain list of ids. OUT.json gets {"logprobs": [[...], ...]}: logprobs[s][i] is
log p(ids[s][i+1] | ids[s][:i+1]). No kestrel code or file besides the HF
directory is read, so agreement with kestrel checks the export end to end.

With --score, SCORE.json is the output of `kestrel score` (on the run the
directory was exported from): its tokens are cut into the same windows
(seq_len + 1 tokens, stride seq_len, the first token of each context only),
and the script prints the max |kestrel - HF| per-token log-probability and
both mean losses, exiting 1 when the max exceeds --tol (1e-4).
"""

import argparse
import json
import math
import os
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        t = torch.frombuffer(bytearray(body[lo:hi]), dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).clone()
    return out


def read_weights(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(idx):
        return read_safetensors(os.path.join(d, "model.safetensors"))
    with open(idx) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    w = {}
    for fn in files:
        w.update(read_safetensors(os.path.join(d, fn)))
    return w


def rms_norm(x, w, eps):
    # HF LlamaRMSNorm / Qwen3RMSNorm: x · rsqrt(mean(x²) + eps) · w
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(cfg, w, ids, dtype):
    arch = cfg["architectures"][0]
    if arch not in ("LlamaForCausalLM", "Qwen3ForCausalLM"):
        raise SystemExit(f"unsupported architecture {arch}")
    qk_norm = arch == "Qwen3ForCausalLM"
    D = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or (128 if qk_norm else D // H)  # Qwen3Config's default head_dim is 128
    L = cfg["num_hidden_layers"]
    eps = cfg.get("rms_norm_eps", 1e-6)
    rp = cfg.get("rope_parameters") or {}  # transformers v5; v4 reads rope_theta
    theta = rp.get("rope_theta", cfg.get("rope_theta", 10000.0))
    tied = cfg.get("tie_word_embeddings", False)  # False in LlamaConfig and Qwen3Config
    if rp.get("rope_type", "default") != "default" or cfg.get("rope_scaling"):
        raise SystemExit("only plain RoPE is modelled here")
    if cfg.get("attention_bias") or cfg.get("mlp_bias"):
        raise SystemExit("biases are not modelled here")
    if cfg.get("hidden_act", "silu") != "silu":
        raise SystemExit("hidden_act must be silu")
    g = lambda n: w[n].to(dtype)
    T = len(ids)
    x = g("model.embed_tokens.weight")[torch.tensor(ids)]
    # RoPE as HF computes it: inv_freq in float32, angles pos·inv_freq, cos/sin of [freqs, freqs].
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    pos = torch.arange(T, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    mask = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)
    for l in range(L):
        p = f"model.layers.{l}."
        h = rms_norm(x, g(p + "input_layernorm.weight"), eps)
        q = (h @ g(p + "self_attn.q_proj.weight").T).view(T, H, hd)
        k = (h @ g(p + "self_attn.k_proj.weight").T).view(T, KV, hd)
        v = (h @ g(p + "self_attn.v_proj.weight").T).view(T, KV, hd)
        if qk_norm:
            q = rms_norm(q, g(p + "self_attn.q_norm.weight"), eps)
            k = rms_norm(k, g(p + "self_attn.k_norm.weight"), eps)
        q = q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]
        k = k * cos[:, None, :] + rotate_half(k) * sin[:, None, :]
        rep = H // KV  # GQA: query head j reads key/value head j // rep
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        att = att.softmax(-1)
        y = torch.einsum("hts,shd->thd", att, v).reshape(T, H * hd)
        x = x + y @ g(p + "self_attn.o_proj.weight").T
        h = rms_norm(x, g(p + "post_attention_layernorm.weight"), eps)
        gate = h @ g(p + "mlp.gate_proj.weight").T
        up = h @ g(p + "mlp.up_proj.weight").T
        x = x + (torch.nn.functional.silu(gate) * up) @ g(p + "mlp.down_proj.weight").T
    x = rms_norm(x, g("model.norm.weight"), eps)
    head = g("model.embed_tokens.weight") if tied else g("lm_head.weight")
    logits = x @ head.T
    lp = torch.log_softmax(logits.double(), dim=-1)
    tgt = torch.tensor(ids[1:])
    return lp[torch.arange(T - 1), tgt].tolist()


def compare_score(cfg, w, path, dtype, tol):
    with open(path) as f:
        sc = json.load(f)
    T = sc["seq_len"]
    ids = [t["id"] for t in sc["tokens"]]
    want = [t["logprob"] for t in sc["tokens"][1:]]
    wins = [ids[i : i + T + 1] for i in range(0, len(ids) - 1, T)]
    with torch.no_grad():
        got = [x for s in wins for x in forward(cfg, w, s, dtype)]
    if len(got) != len(want) or any(x is None for x in want):
        raise SystemExit(f"{path}: windows do not match seq_len {T} (was it scored with the exported run?)")
    worst = max(abs(a - b) for a, b in zip(got, want))
    n = len(got)
    print(f"{n} tokens in {len(wins)} windows: max |kestrel - HF| log-prob {worst:.3g}; "
          f"mean loss kestrel {-sum(want) / n:.7f}, HF {-sum(got) / n:.7f}")
    return 0 if worst <= tol else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("dir")
    ap.add_argument("ids", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--score", help="compare with this `kestrel score` JSON instead")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    a = ap.parse_args()
    with open(os.path.join(a.dir, "config.json")) as f:
        cfg = json.load(f)
    if a.score:
        raise SystemExit(compare_score(cfg, read_weights(a.dir), a.score, getattr(torch, a.dtype), a.tol))
    if not a.out:
        ap.error("give IDS.json and OUT.json, or --score SCORE.json")
    with open(a.ids) as f:
        ids = json.load(f)
    if isinstance(ids, dict):
        ids = ids["ids"]
    if ids and isinstance(ids[0], int):
        ids = [ids]
    w = read_weights(a.dir)
    dtype = getattr(torch, a.dtype)
    with torch.no_grad():
        out = [forward(cfg, w, s, dtype) for s in ids]
    with open(a.out, "w") as f:
        json.dump({"dir": os.path.basename(os.path.normpath(a.dir)), "dtype": a.dtype, "logprobs": out}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
