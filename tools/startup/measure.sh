#!/usr/bin/env bash
# Measures `kestrel train` from exec to the end of step 1 (docs/performance.md,
# "Small models"): for each of N runs, the time taken just before exec
# against step 1's unix_time + step_time in metrics.jsonl of a fresh run
# directory. Prints each run's seconds, then the median.
#
#   tools/startup/measure.sh [BIN] [CONFIG] [N] [extra train flags...]
#
# Defaults: bin/kestrel, configs/shakespeare-char.toml, 5. KESTREL_DATA must
# name the shipped data (e.g. /work/shared/data). The runs stop after
# step 1 (--train.steps=1) with evaluations, benchmarks, samples and the
# report's work after the step included in the process but not in the figure.
set -euo pipefail
bin=${1:-bin/kestrel}
cfg=${2:-configs/shakespeare-char.toml}
n=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vals=()
for i in $(seq 1 "$n"); do
	out="$tmp/run$i"
	t0=$(date +%s.%N)
	"$bin" train --config "$cfg" --out "$out" --train.steps=1 --train.eval_every=0 \
		'--eval.tasks=[]' --samples.enabled=false "$@" >"$tmp/log$i" 2>&1 || { cat "$tmp/log$i" >&2; exit 1; }
	v=$(python3 -c 'import json,sys
t0=float(sys.argv[1])
for line in open(sys.argv[2]):
    r=json.loads(line)
    if r.get("step")==1 and "unix_time" in r:
        print("%.3f"%(r["unix_time"]+r["step_time"]-t0)); break' "$t0" "$out/metrics.jsonl")
	echo "run $i: exec -> step 1 end: ${v} s"
	vals+=("$v")
done
printf '%s\n' "${vals[@]}" | sort -n | awk '{a[NR]=$1} END {print "median: " a[int((NR+1)/2)] " s over " NR " runs"}'
