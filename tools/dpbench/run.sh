#!/usr/bin/env bash
# Throughput of data-parallel training on ref7m (docs/distributed.md):
# alternating pairs of 1 process × 2 threads and mpirun -np 2 × 1 thread,
# the same global batch, on byte-level Tiny Shakespeare (ref7m's shapes;
# the compute per token does not depend on the data). Needs bin/kestrel-mpi
# (make build-mpi). Prints one line per run and the median tokens/s,
# all-reduce time and all-reduce share of each.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin/kestrel-mpi}
PAIRS=${PAIRS:-2}
STEPS=${STEPS:-10}
B=${B:-8}
MPIFLAGS=${MPIFLAGS:-}   # e.g. "--bind-to none" on a machine shared with other jobs
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(train --config configs/shakespeare-char.toml
  --model.vocab=8192 --model.d_model=256 --model.n_layers=4 --model.n_heads=4 --model.n_kv_heads=4
  --model.mlp_hidden=768 --model.seq_len=256 --model.tied_embeddings=false
  --train.steps="$STEPS" --train.batch_size="$B" --train.eval_every=0 --train.val_fraction=0.02
  --train.probe_sequences=0 --train.log_every=0 --train.peak_gflops=1 --checkpoint.every=0)
summ() { # run dir → median tokens/s, allreduce_time, allreduce share over steps 3..
  python3 - "$1" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
rows = [r for r in rows if "train_loss_raw" in r and r["step"] >= 3]
tps = statistics.median(r["tokens_per_sec"] for r in rows)
st = statistics.median(r["step_time"] for r in rows)
ar = statistics.median(r.get("allreduce_time", 0.0) for r in rows)
by = rows[0].get("allreduce_bytes", 0)
fb = statistics.median(r.get("rank_compute_time/rank0", r["forward_time"] + r["backward_time"]) for r in rows)
print(f"tokens_per_sec {tps:.0f} step_time {st:.3f}s compute {fb:.3f}s allreduce_time {ar*1e3:.1f}ms share {ar/st:.3f} allreduce_bytes {by:.0f}")
PY
}
for i in $(seq 1 "$PAIRS"); do
  GOMAXPROCS=2 "$BIN" "${common[@]}" --out "$out/one$i" --train.micro_batch="$B" >/dev/null 2>&1
  echo "pair $i 1 process x 2 threads: $(summ "$out/one$i")"
  GOMAXPROCS=1 mpirun --oversubscribe --allow-run-as-root $MPIFLAGS -np 2 -x GOMAXPROCS "$BIN" "${common[@]}" --out "$out/two$i" >/dev/null 2>&1
  echo "pair $i 2 ranks x 1 thread:    $(summ "$out/two$i")"
done
