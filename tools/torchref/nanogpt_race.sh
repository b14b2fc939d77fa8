#!/usr/bin/env bash
# Time to the target val loss: nanoGPT's CPU baby GPT against kestrel's
# configs/shakespeare-char.toml (docs/performance.md, "Small models").
#
#   tools/torchref/nanogpt_race.sh nano NANOGPT_DIR   # a clone of karpathy/nanoGPT
#   tools/torchref/nanogpt_race.sh kestrel [BIN]
#
# Each line of the run's output is prefixed with the seconds since just
# before exec; the run is stopped at the first evaluation at or below 1.88
# (nanoGPT's run on this config ends at 1.886, at step 2000). nanoGPT needs
# data/shakespeare_char/input.txt (copy $KESTREL_DATA/tinyshakespeare/
# input.txt there and run its prepare.py with /usr/bin/python3) and
# torch on OpenBLAS (tools/torchref/README.md).
# PyTorch runs with its default threads: on the 2-core VM that is one
# ATen/OpenMP thread plus OpenBLAS's pthreads, its fastest setting there
# (100.8 s; 117 s with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1, 244 s with
# both at 2: docs/performance.md, "Where issue 39 stands").
set -uo pipefail
what=${1:?nano or kestrel}
# Times in integer microseconds from bash's own clock ($EPOCHREALTIME): no
# process forked per output line, so the stamping takes no CPU from the run.
t0=${EPOCHREALTIME/[.,]/}
stamp() {
	while IFS= read -r l; do
		local d=$(( ${EPOCHREALTIME/[.,]/} - t0 ))
		printf '%d.%06d %s\n' $((d / 1000000)) $((d % 1000000)) "$l"
		case "$l" in
		*"val loss 1.8"[0-8]* | *"val loss 1."[0-7]* | *"msg=eval "*"val_loss=1.8"[0-8]* | *"msg=eval "*"val_loss=1."[0-7]*)
			echo "TARGET"; kill "$(cat "$pidfile")" 2>/dev/null; break ;;
		esac
	done
}
pidfile=$(mktemp)
case $what in
nano)
	cd "${2:?NANOGPT_DIR}" || exit 1
	( /usr/bin/python3 -u train.py config/train_shakespeare_char.py --device=cpu --compile=False \
		--eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 \
		--n_embd=128 --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0 2>&1 & echo $! >"$pidfile"; wait ) | stamp ;;
kestrel)
	out=$(mktemp -d)
	( "${2:-bin/kestrel}" train --config configs/shakespeare-char.toml --out "$out/run" 2>&1 & echo $! >"$pidfile"; wait ) | stamp ;;
*)
	echo "usage: $0 nano NANOGPT_DIR | kestrel [BIN]" >&2; exit 2 ;;
esac
