#!/usr/bin/python3
"""Inputs for llm.c's CPU trainer (train_gpt2.c) without downloading
anything: a GPT-2 124M checkpoint with random weights in llm.c's
gpt2_124M.bin format, and random token files in its data format, so that
its step time (and so its MFU) can be measured beside `kestrel bench step
--preset 124m`. The loss is meaningless; the arithmetic per step is the
same as with the real weights.

Formats (as train_gpt2.c and llmc/dataloader.h read them):
  checkpoint: 256 int32 header [20240326, 3, max_seq_len, vocab_size,
    num_layers, num_heads, channels, padded_vocab_size, 0...], then the
    float32 parameters in order wte (Vp·C), wpe (maxT·C), ln1w, ln1b (L·C),
    qkvw (L·3C·C), qkvb (L·3C), attprojw (L·C·C), attprojb (L·C), ln2w,
    ln2b (L·C), fcw (L·4C·C), fcb (L·4C), fcprojw (L·C·4C), fcprojb (L·C),
    lnfw, lnfb (C).
  tokens: 256 int32 header [20240520, 1, ntok, 0...], then ntok uint16.

Usage: /usr/bin/python3 tools/torchref/llmc_inputs.py DIR
  writes DIR/gpt2_124M.bin and DIR/dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin
  (the paths train_gpt2.c opens; run it from DIR).
"""
import os
import sys

import numpy as np

MAXT, V, L, NH, C, VP = 1024, 50257, 12, 12, 768, 50304


def header(values):
    h = np.zeros(256, dtype=np.int32)
    h[:len(values)] = values
    return h.tobytes()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    rng = np.random.default_rng(1)
    shapes = [("wte", VP * C, "w"), ("wpe", MAXT * C, "w"), ("ln1w", L * C, "one"), ("ln1b", L * C, "zero"),
              ("qkvw", L * 3 * C * C, "w"), ("qkvb", L * 3 * C, "zero"), ("attprojw", L * C * C, "w"),
              ("attprojb", L * C, "zero"), ("ln2w", L * C, "one"), ("ln2b", L * C, "zero"),
              ("fcw", L * 4 * C * C, "w"), ("fcb", L * 4 * C, "zero"), ("fcprojw", L * C * 4 * C, "w"),
              ("fcprojb", L * C, "zero"), ("lnfw", C, "one"), ("lnfb", C, "zero")]
    os.makedirs(out, exist_ok=True)
    n = 0
    with open(os.path.join(out, "gpt2_124M.bin"), "wb") as f:
        f.write(header([20240326, 3, MAXT, V, L, NH, C, VP]))
        for _, size, kind in shapes:
            if kind == "w":
                x = (rng.standard_normal(size, dtype=np.float32) * 0.02).astype(np.float32)
            elif kind == "one":
                x = np.ones(size, dtype=np.float32)
            else:
                x = np.zeros(size, dtype=np.float32)
            f.write(x.tobytes())
            n += size
    d = os.path.join(out, "dev", "data", "tinyshakespeare")
    os.makedirs(d, exist_ok=True)
    for split, ntok in (("train", 1 << 18), ("val", 1 << 15)):
        toks = rng.integers(0, V, ntok, dtype=np.uint16)
        with open(os.path.join(d, f"tiny_shakespeare_{split}.bin"), "wb") as f:
            f.write(header([20240520, 1, ntok]))
            f.write(toks.tobytes())
    print(f"{out}/gpt2_124M.bin: {n} parameters; token files in {d}")


if __name__ == "__main__":
    main()
