package monitor

import (
	"fmt"
	"strings"
)

// Runbook is what an alert tells the person on call: what the rule means,
// the evidence to capture, the containment step, and how to verify a fix.
type Runbook struct {
	Rule     string
	Severity Severity
	Title    string
	Meaning  string
	Capture  string
	Contain  string
	Verify   string
}

// Text renders the runbook as the few lines carried by an alert.
func (r Runbook) Text() string {
	return fmt.Sprintf("%s [%s] %s. Meaning: %s Capture: %s Contain: %s Verify: %s (docs/runbooks.md#%s)",
		r.Rule, r.Severity, r.Title, r.Meaning, r.Capture, r.Contain, r.Verify, r.Rule)
}

// Rule names.
const (
	RuleNaNInf           = "nan_inf"
	RuleCheckpointFailed = "checkpoint_failed"
	RuleSkipStorm        = "skip_storm"
	RuleLossSpike        = "loss_spike"
	RuleSpikeVerdict     = "loss_spike_verdict"
	RuleSpikeCluster     = "loss_spike_cluster"
	RuleAttnLogitRunaway = "attn_logit_runaway"
	RuleAttnLogitCap     = "attn_logit_above_cap"
	RuleEntropyCollapse  = "attn_entropy_collapse"
	RuleThroughputDrop   = "throughput_drop"
	RuleContention       = "contention"
	RuleDivergence       = "divergence"
	RuleClipRate         = "clip_rate_rising"
	RuleManifest         = "manifest_mismatch"
	RuleMixDrift         = "mixture_drift"
	RuleValRegression    = "val_regression"
	RuleStall            = "dataloader_stall"
	RuleBatchAnomaly     = "batch_anomaly"
	RuleFlatLoss         = "flat_loss_after_warmup"
	RuleKLSpike          = "output_kl_spike"
	RuleProbeJump        = "fixed_probe_discontinuity"
	RuleGapWidening      = "train_val_gap_widening"
	RuleSliceRegression  = "slice_val_regression"
	RuleBenchRegression  = "bench_regression"
	RuleCheckpointSlow   = "checkpoint_time_growth"
	RuleOffTrack         = "off_track" // ontrack.go

	// Batch checks and seed 004's alert gaps (batchrules.go, gaprules.go).
	RuleGarbageBatch = "garbage_batch"
	RuleValJump      = "val_loss_jump"
	RuleRestartStorm = "restart_storm"
)

// runbooks are the source of docs/runbooks.md, in severity order.
var runbooks = []Runbook{
	{RuleRankHang, SEV0, "a rank never reached a collective",
		"in a data-parallel run (bin/kestrel-mpi) a rank did not reach a collective (gradient all-reduce, step agreement) within train.comm_timeout_s: it is hung (deadlock, stuck I/O, swapping, a dead node or network) and every other rank waits on it. The alert names the rank and its host, from rank 0's table of how many collectives each rank has started.",
		"the named rank's host: its kestrel process (alive? stack with kill -QUIT), load, memory, dmesg; the network between the hosts; the step of the alert in metrics.jsonl and the rank's rank_step_time before it.",
		"the run stops (each rank returns the timeout); the last checkpoint is intact. Fix or drain the host, then rerun the same mpirun/srun command: the run resumes from the checkpoint, with another number of ranks if need be.",
		"the resumed run passes the step; rank_allreduce_time and straggler_ratio are back to their earlier level."},
	{RuleNaNInf, SEV0, "NaN/Inf in loss, gradients or weights",
		"nan_inf_events > 0 (or a non-finite train_loss_raw/grad_global_norm): numbers are corrupt and any update applied now damages the weights irreversibly.",
		"the incident bundle (last N steps of metrics, batch ids and sources of those steps, config.toml, manifest.json); the step's learning_rate, grad_global_norm, max_attn_logit, residual_rms; `kestrel replay RUN --steps A:B` (A:B around the step) recomputes each batch's loss and gradient norm on the checkpoint before A and lists its documents and sources.",
		"the run pauses without checkpointing; the last-good checkpoint stays untouched (`kestrel checkpoints RUN` marks it with *). A batch that is non-finite on fixed weights in `kestrel replay RUN --steps A:B --checkpoint last-good` is a data event, else numerics or the LR. Then `kestrel rewind RUN --to last-good --skip-steps A:B --reason …` (add `--lr-scale 0.5 --lr-steps N` for the LR) and rerun the same `kestrel train --config … --out RUN`.",
		"`kestrel replay RUN --probe --checkpoint last-good` prints the fixed_probe_loss logged at that step (the checkpoint is intact); after the rewound run passes the step, nan_inf_events stays 0 and `kestrel checkpoints RUN` lists healthy checkpoints past it. For bad documents: `kestrel replay RUN --steps A:B --json > bad.json`, `kestrel quarantine DATASET --from-replay bad.json --reason …` before the rewind."},
	{RuleCheckpointFailed, SEV0, "checkpoint save or verification failed",
		"checkpoint_ok is false: a checkpoint could not be written, or failed its verification after the write — its files re-read against SHA256SUMS, and at checkpoint.verify_restore_every the restore test (optimizer.safetensors read back bit for bit against the Adam moments in memory, which must be finite). Without a verified checkpoint there is nothing safe to roll back to. A checkpoint that failed verification stays on disk for the evidence, marked in its confirmation.json (verification: failed): it is never last-good, never resumed from and never a rollback's target; training goes on and the next checkpoint is tried.",
		"the failing checkpoint directory (kept under its temporary name when the write failed), its confirmation.json and checkpoint_error in metrics.jsonl (the file, tensor and element that differ), free disk space, the error text, the previous good checkpoint's SHA256SUMS, dmesg for I/O errors.",
		"the run pauses when it could not write; the earlier checkpoints stay as they are and the keep policy never deletes the last-good one; fix space, permissions or the disk, then rerun the same `kestrel train --config … --out RUN` (it resumes from the newest checkpoint that verifies and was not marked failed). A repeated restore-test failure with good checksums is a serialization bug: keep the checkpoint and report it.",
		"`kestrel checkpoints RUN` lists the checkpoints written after the resume, the failed one rejected; `kestrel replay RUN --probe --checkpoint last-good` reproduces the logged fixed_probe_loss; a resumed run reproduces the losses bit for bit."},
	{RuleOptStateNonFin, SEV0, "optimizer state not finite",
		"opt_state_finite is 0: an Adam moment (exp_avg or exp_avg_sq) is NaN or infinite. An infinite second moment silences its parameter's updates and a NaN spreads on the next step; the loss can look normal meanwhile (seed 004: corrupted moments cause slow drift and late regressions). Checked every step from adam_m_norm and adam_v_norm (a sum of squares in float64 is finite exactly when every moment is), and in the checkpoint restore test.",
		"adam_m_norm and adam_v_norm globally and per layer (adam_m_norm/layerL …: which layer), grad_global_norm and update_norm around the step, the last checkpoint's restore test, the incident bundle.",
		"the run pauses (monitor.pause_on_sev0); do not trust checkpoints written after the step. `kestrel rewind RUN --to last-good --reason …` and rerun the same `kestrel train`; if it repeats, set init.necromancy to reset the moments from the checkpoint.",
		"opt_state_finite stays 1 past the step; the next checkpoint's restore test passes."},
	{RuleSkipStorm, SEV0, "sustained skipped updates or overflows",
		"more than skip_storm_frac of the last skip_storm_steps steps were skipped or overflowed: the run consumes compute without learning (steps_seen lags tokens_seen).",
		"the incident bundle; the rolling grad/update-norm windows; loss_scale and overflow_rate; the sources of the skipped batches.",
		"the run pauses; `kestrel rewind RUN --to last-good --lr-scale 0.5 --lr-steps N --reason …` and rerun the same `kestrel train`; check unscale-before-clip ordering.",
		"a canary: after the `kestrel rewind`, rerun the same `kestrel train --config … --out RUN` and stop it (Ctrl-C writes an interrupt checkpoint) N steps later; `kestrel checkpoints RUN` lists the new checkpoints' health, val_loss and probe_loss beside the rewind point's, and `kestrel replay RUN --probe --checkpoint last` measures the probe batch now; if it fails, `kestrel rewind RUN --to STEP` to the same checkpoint again with another fix: skipped_updates stays ~0 over 200 steps."},
	{RuleDivergence, SEV0, "training diverged",
		"the run blew up: train_loss_raw stayed above ln V + divergence_loss_margin (worse than predicting every token of the vocabulary uniformly, judged from the first step of every start, resume and rollback) or above the larger of divergence_loss_factor × its window median and ln V for divergence_steps steps, or val_loss (over the trained mixture) is worse than that uniform prediction by divergence_val_margin nats, or one update_to_weight exceeded divergence_update_abs, or divergence_update_factor × its window median (and divergence_update_min), or stayed above divergence_update_rise × that median for divergence_steps steps (an LR too high at every step): the weights no longer hold what the run learned. The windows are seeded from metrics.jsonl on a resume or rollback and frozen while the criteria hold, so diverged values never raise the bound.",
		"the incident bundle (last N steps of metrics and batch ids, config.toml, manifest.json); learning_rate, update_to_weight, grad_global_norm, max_attn_logit and attn_entropy around the first bad step; which criterion fired (the alert's metric).",
		"the run pauses without checkpointing; the last-good checkpoint stays untouched (`kestrel checkpoints RUN` marks it with *; the keep policy never deletes it). Find the first bad step: an LR or schedule error (update_to_weight jumps first), a data event (`kestrel replay RUN --steps A:B` names the batches' sources and documents), or attention runaway (max_attn_logit first). Then `kestrel rewind RUN --to last-good --skip-steps A:B` (A:B the spike window) with the cause fixed — `--lr-scale 0.5 --lr-steps N`, `--set optim.max_grad_norm=0.2`, `--set optim.qk_clip_tau=100` — and `--reason …`, and rerun the same `kestrel train --config … --out RUN`. With `rescue.auto_rollback = true` in the config the trainer does this rollback itself.",
		"`kestrel replay RUN --probe --checkpoint last-good` prints the fixed_probe_loss logged at that step; then a canary: after the `kestrel rewind`, rerun the same `kestrel train --config … --out RUN` and stop it (Ctrl-C writes an interrupt checkpoint) N steps later; `kestrel checkpoints RUN` lists the new checkpoints' health, val_loss and probe_loss beside the rewind point's, and `kestrel replay RUN --probe --checkpoint last` measures the probe batch now; if it fails, `kestrel rewind RUN --to STEP` to the same checkpoint again with another fix: the loss rejoins its pre-incident trend within a few hundred steps."},
	{RuleBlackout, SEV0, "monitoring blackout: the followed run stopped writing",
		"kestrel watch --follow read no new record for max(blackout_factor × the source's median interval between records, blackout_min_seconds) and its last record is not the checkpoint a kestrel trainer writes as it exits (final, time_limit, interrupt): the run is dead, hung, or writing somewhere else, and nothing is watching it now. A run that is still training blind is as dangerous as one that diverged.",
		"the source's last records and its modification time, the trainer's process state (running? CPU use? stack dump with SIGQUIT for Go), its stdout/stderr, free disk space, whether the log was rotated or moved.",
		"find the trainer process: if it is gone, rerun the same `kestrel train --config … --out RUN` (it resumes from the newest valid checkpoint; `kestrel rewind RUN --to last-good` first when `kestrel checkpoints RUN` shows the newest unhealthy); if it hangs, take a stack dump before killing it; if it writes elsewhere, point the watch there.",
		"records arrive again (the watch logs 'monitoring blackout over') and step and tokens_seen advance."},
	{RuleLossSpike, SEV1, "loss spike detected",
		"train_loss_raw rose more than spike_z robust standard deviations (median/MAD) above its rolling window; the message says whether grad/update norms spiked first, and cites a garbage batch (garbage_batch, batch_anomaly) of the spike_lookback steps before it. The window is re-based at a planned change of the loss's level — a data stage's start_step, a re-warm-up (a new lr_cycle, a knob's lr_scale turning, the LR ramping up again after it fell) — and the rule is silent until it holds window/2 steps of the new level (the divergence rule holds meanwhile); an LR that jumps at once is no plan.",
		"the spike step's batch ids and sources (`kestrel replay RUN --steps A:B` around the spike: loss and grad norm of each batch on fixed weights, its documents and sources), max_attn_logit, grad_global_norm, update_norm, learning_rate around the spike.",
		"raise metric sampling; the rollback point is kept (the keep policy never deletes the newest checkpoint from before an open incident: `kestrel checkpoints RUN`); if norms preceded the loss, tighten clipping (`kestrel rewind RUN --to last-good --set optim.max_grad_norm=0.2`) or lower the LR (`--lr-scale 0.5 --lr-steps N`). The classifier gives its verdict after spike_follow steps.",
		"after the follow-up window the verdict alert says recoverable, logging artifact, data event or structural instability."},
	{RuleBatchAnomaly, SEV1, "a batch unlike the run's data",
		"batch_token_entropy, the unigram entropy of the batch's target tokens, left the band of the batches before it by more than batch_entropy_shift nats: random tokens (entropy up), one repeated token or padding (down), a shard of another tokenizer. The rule needs no loss movement, so it sees a poisoned window from the first steps of a run, where the loss cannot tell garbage from text. Finer garbage that moves the entropy by less (base64, markup, another script) is the SEV2 garbage_batch; a batch raises one of the two, this one carrying garbage_batch's evidence.",
		"the batch's sources and documents (`kestrel replay RUN --steps A:B --decode` prints each row as text with its source and document ids), the step's train_loss_raw and grad_global_norm, the dataset's shards around those documents.",
		"find the documents (`kestrel replay RUN --steps A:B --json > bad.json`), quarantine them (`kestrel quarantine DATASET --from-replay bad.json --reason …`), then `kestrel rewind RUN --to last-good --skip-steps A:B --reason …` and rerun the same `kestrel train`; with `rescue.on` naming `data_event` the trainer rewinds and skips the window itself.",
		"after the rewind, batch_token_entropy stays in its band past the window and val_loss is on its pre-window trend."},
	{RuleSpikeVerdict, SEV1, "loss spike classified",
		"the seed-000 flowchart applied to a spike: recoverable (back in the pre-spike band), logging artifact (val did not move), data event (val shifted, norms back to normal: the batch; or a recovered spike whose batch came mostly from a source the run had hardly seen in the window before, with no norm spiking before the loss), structural instability / new worse plateau (val shifted, norms stay elevated). Recoverable and artifact verdicts are SEV2.",
		"for a data event: `kestrel replay RUN --steps A:B --json > spike.json` (the window's batch sources and document ids); for structural instability: per-layer max_attn_logit, attn_entropy and update_to_weight.",
		"data event: `kestrel quarantine DATASET --from-replay spike.json --source SRC --reason …` (or `--docs ID,…`, `--shards FILE`), then `kestrel rewind RUN --to last-good --skip-steps A:B --reason …` (`--to STEP` with STEP = A−1, the newest checkpoint before the window, when the run recovered and last-good is past it) and rerun the same `kestrel train`; structural: `kestrel rewind RUN --to last-good --lr-scale 0.5 --lr-steps N --set optim.qk_clip_tau=100` (QK-Clip), or a warm-start into QK-norm (`model.qk_norm = true` with `init.from`).",
		"`kestrel replay RUN --probe --checkpoint last-good` prints the fixed_probe_loss logged at its step; once the rewound run is past the window, `kestrel checkpoints RUN` shows val_loss and probe_loss on the pre-spike trend and slice_val_loss of every source falls again."},
	{RuleSpikeCluster, SEV1, "repeated loss spikes",
		"spike_cluster or more loss spikes within cluster_window steps: spikes that keep coming are a warning even when each one recovers (Marin 32B: clipping softened them until the attention stack changed).",
		"the list of spike steps with their precursors and verdicts; max_attn_logit and attn_entropy per layer.",
		"reduce the LR or tighten clipping: `kestrel rewind RUN --to last-good --lr-scale 0.5 --set optim.max_grad_norm=0.2 --set optim.update_clip_sigma=1.5` (`optim.clip_update_norm`, `optim.update_clip_sigma`); if the optimizer state itself looks poisoned (adam_m_norm doubling), `kestrel rewind RUN --to last-good --set init.necromancy=1` (`init.necromancy = 1` (Marin 32B's necromancy: Adam moments and bias-correction count reset, update-clip and skip-step windows seeded from the checkpoint so they hold from the first step; raise it to 2, 3 … for a later reset); plan an attention-stability change (QK-Clip: `--set optim.qk_clip_tau=100`, or QK-norm) if spikes persist.",
		"spike rate falls and the loss rejoins its trend band."},
	{RuleAttnLogitRunaway, SEV1, "max attention logit runaway",
		"max_attn_logit exceeds attn_logit_red (Kimi K2: > 1000 usually precedes loss spikes and divergence).",
		"per-layer/head max_attn_logit and attn_entropy, the learning rate, the last checkpoint step.",
		"cap the logits: `kestrel rewind RUN --to last --set optim.qk_clip_tau=100 --reason …` and rerun the same `kestrel train` (QK-Clip: after each step the heads over τ get their q/k weights, or QK-norm gains, rescaled; qk_clipped_heads counts them), or warm-start into `model.qk_norm = true` (configs/warmstart-qknorm.toml); lower the LR (`--lr-scale 0.5`); `--to last-good` instead of `--to last` if coupled with NaNs.",
		"max_attn_logit stays bounded after resume (at most about τ with QK-Clip) and qk_clipped_heads falls back towards 0."},
	{RuleAttnLogitCap, SEV2, "attention logits above the τ cap",
		"max_attn_logit stayed above attn_logit_cap (τ = 100) for cooldown steps: heads are sharpening towards the unstable regime.",
		"which layers/heads exceed the cap and their trend.",
		"watch attn_entropy; consider QK-Clip (`kestrel rewind RUN --to last --set optim.qk_clip_tau=100`), QK-norm or a lower LR (`--lr-scale 0.5`) before it runs away.",
		"the fraction of heads above the cap stops growing."},
	{RuleEntropyCollapse, SEV1, "attention entropy collapse",
		"attn_entropy_mean (the mean over heads; the worst head when only that is reported) fell below entropy_collapse nats or below entropy_drop_frac of its early-run median: attention concentrates on single tokens, which precedes oscillation and divergence (Zhai et al.).",
		"per-layer/head attn_entropy and max_attn_logit, the LR schedule position.",
		"reduce the LR (`kestrel rewind RUN --to last-good --lr-scale 0.5 --lr-steps N`); add QK-Clip (`--set optim.qk_clip_tau=100`) or QK-norm control; sample more heads during the incident.",
		"a canary: after the `kestrel rewind`, rerun the same `kestrel train --config … --out RUN` and stop it (Ctrl-C writes an interrupt checkpoint) N steps later; `kestrel checkpoints RUN` lists the new checkpoints' health, val_loss and probe_loss beside the rewind point's, and `kestrel replay RUN --probe --checkpoint last` measures the probe batch now; if it fails, `kestrel rewind RUN --to STEP` to the same checkpoint again with another fix: attn_entropy_mean recovers to a stable band."},
	{RuleThroughputDrop, SEV1, "throughput or MFU drop",
		"tokens_per_sec or mfu (median of the last quarter of the window) fell more than throughput_drop below the median of the window before it (steps with an eval or checkpoint are left out), and no second witness saw other work take the cores (steal time, cpu_steal_frac; preemption, involuntary_ctx_switches; when one did, the alert is the SEV2 contention instead; without a witness in the samples, when the process CPU time per token, cpu_time, grew with the wall time): every unit of learning now costs more, or the process waits (I/O, data, locks). The message states the evidence: wall and CPU time medians, and each witness before and after. One incident with contention: within the cooldown of either, neither fires again.",
		"step_time decomposition (data wait, forward, backward, optimizer, checkpoint, eval), dataloader_stall_frac, a trace.json around the slow steps.",
		"find the dominant phase; if input-bound raise prefetch; if another process competes for cores, isolate the run.",
		"tokens_per_sec returns to its band."},
	{RuleClipRate, SEV1, "rising gradient clip rate",
		"the clip rate of the last window steps exceeds clip_rate while the clip_baseline steps before them clipped less than clip_rate, and it rose by at least clip_rise: the run started hitting its safety rail. A rate that is high from the start (nanoGPT's recipe clips most steps by design) is not a rise.",
		"grad_global_norm trend, the sources of the clipped batches, max_attn_logit.",
		"localise (shard, attention logits); reduce the LR; improve filtering of the offending source.",
		"clip rate falls back below the threshold."},
	{RuleFlatLoss, SEV1, "flat loss after warm-up",
		"seed 000's red flag: early after warm-up the median train_loss_raw of a window of window steps fell less than flat_loss_drop (relative) below the window before it (checked for flat_loss_windows windows; window 0 is the last window of warm-up, whose length the trainer passes, else read from learning_rate): the run burns compute without learning. Causes: LR too small or zero after warm-up (schedule bug), wrong init, empty or constant data, layers frozen by mistake, a loss that no longer reaches the parameters.",
		"learning_rate and lr_phase around the end of warm-up, update_norm and update_to_weight (near 0 = nothing moves), grad_global_norm, the batch sources and pad_fraction (empty or padded data), per-layer update norms (a frozen layer stays at 0).",
		"stop the run before it spends its budget: check the LR schedule and optimizer config, that gradients reach every parameter, and that the batches hold real tokens; fix and restart from step 0 (a new --out), or `kestrel rewind RUN --to STEP` (the last checkpoint before the flat stretch) with the fix as `--set optim.lr=…` (or `--set optim.warmup_steps=…`) and rerun the same `kestrel train`.",
		"a canary: after the `kestrel rewind`, rerun the same `kestrel train --config … --out RUN` and stop it (Ctrl-C writes an interrupt checkpoint) N steps later; `kestrel checkpoints RUN` lists the new checkpoints' health, val_loss and probe_loss beside the rewind point's, and `kestrel replay RUN --probe --checkpoint last` measures the probe batch now; if it fails, `kestrel rewind RUN --to STEP` to the same checkpoint again with another fix: the window medians fall again a few windows past warm-up."},
	{RuleKLSpike, SEV1, "output distribution jumped between checkpoints",
		"output_kl_to_prev (KL of the model's outputs on the frozen probe batch against the previous checkpoint) exceeded kl_spike_factor × the median of the previous (up to 3) checkpoints and kl_spike_min nats: the model's behaviour shifted abruptly although scalar losses may look stable (seed 004). Healthy runs show a KL that falls from checkpoint to checkpoint as the LR decays; a planned LR re-warm-up raises it too.",
		"the two checkpoints, fixed_probe_loss and val_loss at the evals around them (the message names val_loss), learning_rate, update_to_weight and loss spikes in between, manifest.json (a resume with other code or data).",
		"rerun the probe on both checkpoints (`kestrel replay RUN --probe --checkpoint step-N`, deterministic) to rule out a probe or harness change; if the KL spike lines up with a val regression, `kestrel rewind RUN --to STEP` (the earlier checkpoint) with `--lr-scale 0.5 --lr-steps N`, or quarantine the batches in between (`kestrel replay RUN --steps A:B --json > kl.json`, `kestrel quarantine DATASET --from-replay kl.json --reason …`) and `--skip-steps A:B`.",
		"the next checkpoint's output_kl_to_prev returns to its falling trend and val_loss keeps improving."},
	{RuleManifest, SEV1, "reproducibility manifest mismatch on resume",
		"the resumed run's manifest.json differs from the current one (code, Go version, config, tokenizer, dataset or probe/eval hashes): comparisons across the resume are not valid.",
		"both manifests and the list of differing fields.",
		"stop if the tokenizer, dataset or probe changed by accident; otherwise note the change and invalidate cross-resume comparisons.",
		"`kestrel replay RUN --probe --checkpoint last` under the new code prints the fixed_probe_loss logged at that step."},
	{RuleStalled, SEV1, "training step stalled",
		"a step is still running after max(stalled_factor × the median step time, stalled_min_seconds) (the watchdog runs only from a step's start to its end: evaluations and checkpoints do not count). Fired while the step runs: the trainer may be blocked on input (a stuck data source, a dead network mount), swapping, or deadlocked.",
		"a goroutine dump of the trainer (kill -QUIT, or the pprof endpoint when enabled), data_wait_time of the last steps, the data source's state (files, mounts), memory and swap (free -m), CPU use of the process and of the machine.",
		"if the data source is stuck, fix or restart it; if the machine swaps, reduce the batch or stop neighbours; if nothing moves for long, stop the run (the last checkpoint is intact) and resume.",
		"the step completes (the monitor logs 'stall recovered') and step_time returns to its band; kestrel_last_step_time_seconds advances again."},
	{RuleTokensFlat, SEV1, "tokens_seen flatline",
		"tokens_seen (non-pad target tokens trained on) did not grow over tokens_flat_steps steps while steps advanced: the run consumes compute without training on anything (all-padding batches, an exhausted or empty data source, a loop of skipped steps).",
		"pad_fraction and tokens_per_update of the flat steps, the data source's position/stage, skipped_updates, the batch ids of a flat step.",
		"stop the run before it wastes more compute; check the data source (packing, stage weights, end of data) and the skip rules; `kestrel rewind RUN --to STEP` (the checkpoint before the flatline, `--skip-steps A:B` for empty batches) and rerun the same `kestrel train`.",
		"tokens_seen grows at tokens_per_update per step again (the monitor logs 'tokens_seen grows again')."},
	{RuleStraggler, SEV1, "straggler rank",
		"in a data-parallel run the slowest rank's step time (less its time waiting in collectives) stayed above monitor.straggler_ratio × the median rank's for monitor.straggler_steps steps, with the same rank slowest: every rank waits for it at each all-reduce, so the whole run goes at its speed. The alert names the rank and its host.",
		"rank_step_time/rankR, rank_compute_time/rankR, rank_data_wait_time/rankR of every rank (dashboard: per-rank panel); load and CPU frequency of the named host (another job, thermal throttling), its data path.",
		"move the run off the host, or free it (stop the competing job); resume with one rank fewer if the host cannot be fixed.",
		"straggler_ratio falls back towards 1."},
	{RuleMemoryCreep, SEV1, "memory creep",
		"the process's anonymous resident memory (rss_bytes − rss_file_bytes) grew steadily over the last memory_creep_window steps: the medians of 8 blocks of the window rose at least 6 times in 7, by memory_creep_mb MiB in all (a buffer allocated once rises once and does not count; the first max(10, window/4) steps of every start and after a rollback are ignored). A leak ends in swapping (every step slows) and then an OOM kill, on a shared CPU machine often of a neighbour first (seed 004: memory creep predicts OOM storms). The alert says whether go_heap_bytes grows with it (objects kept alive) or not (memory outside the Go heap). Growth that the live heap (go_heap_bytes) and the memory outside the Go runtime's (rss_bytes − go_mapped_bytes) together explain less than half of is the heap filling towards its GC goal (about twice the live heap; the runtime returns freed pages slowly) and is not an alert: a healthy demo run climbs 530 → 890 MiB over its first 400 steps that way, then levels.",
		"rss_bytes, rss_file_bytes and go_heap_bytes over the run (dashboard Memory panel), the preflight estimate (manifest memory_estimate_bytes) and the available memory, a heap profile of the process if it can be taken, the config changes of the last start ([debug] leak_mb_per_step injects a leak).",
		"if the growth will reach the available memory before the run ends, stop with Ctrl-C (it writes a checkpoint) and resume: a fresh process starts from the preflight's footprint. Report the leak with the curves; lower train.batch_size or train.micro_batch only if the peak itself is too high.",
		"after the resume rss_bytes levels off after its first steps; no memory_creep over the next memory_creep_window steps."},
	{RuleContention, SEV2, "throughput drop from contention",
		"tokens_per_sec or mfu fell like a throughput_drop, and a second witness saw other work take the cores: the hypervisor's steal time (cpu_steal_frac, median) rose by 3 points of the host's CPU time or more, or the kernel preempted the process's threads (involuntary_ctx_switches per second, median) twice as often and 50/s more. Samples without a witness (another trainer's, kestrel watch) are judged on CPU time alone, and the message says so: contention when the process CPU time per token (cpu_time) rose by less than contention_cpu_share of the wall-time rise. The message carries the wall and CPU time medians per step (CPU time under contention grows too: shared caches, a busy SMT sibling) and each witness before and after.",
		"the alert's wall and CPU time medians; top/ps of the machine at the time (other processes' CPU), steal time (%st in top, /proc/stat), the number of kernel threads (kernels.Threads) against free cores.",
		"nothing in the run is wrong: move other work off the machine, pin the run to free cores, or lower the thread count to the cores it really has. Compare throughput only across runs on a quiet machine.",
		"tokens_per_sec returns to its band when the other work stops, with cpu_time per step unchanged throughout."},
	{RuleMixDrift, SEV2, "data mixture drift",
		"a source's source_mix_share (window mean) differs from its target weight by more than mix_drift; the target is the weight of the data stage in force at each step, inside a stage's ramp_steps the loader's linear interpolation from the mixture before (source_mix_target).",
		"per-source shares against source_mix_target over time, the loader's stage and ramp, token_kl_drift.",
		"check the loader's mixture and stage config (`data.sources`, `data.stages`); take a bad new source out with `kestrel quarantine DATASET --shards FILE,… --reason …`.",
		"slice_val_loss of the affected sources is stable."},
	{RuleValRegression, SEV2, "slow validation regression",
		"val_loss rose in val_regress_evals consecutive evaluations.",
		"val_loss, slice_val_loss per source, train_val_gap, fixed_probe_loss and eval artifact hashes.",
		"triage in order: eval harness drift, data drift, internal drift, architecture; roll back a mixture change.",
		"val_loss resumes its decline."},
	{RuleStall, SEV2, "dataloader stalls",
		"dataloader_stall_frac (window mean) exceeds stall_frac: the step waits on input.",
		"data_wait_time per step, prefetch depth, disk throughput, a trace.json.",
		"raise prefetch, pre-tokenise, move shards to local disk.",
		"stall fraction below the threshold."},
	{RuleProbeJump, SEV2, "fixed probe loss discontinuity",
		"fixed_probe_loss (the loss on the frozen probe batch, probe.json) moved between two evals by more than fixed_probe_jump nats beyond what val_loss moved: the canary invariant broke. The probe tokens never change, so a jump the val loss does not share means the tokenizer, masking, packing or preprocessing changed (or the probe file did), not the model (seed 004).",
		"probe.json and its hash in manifest.json before and after, tokenizer_hash, the code version (git_sha), resume events between the two evals, val_loss and slice_val_loss at both evals.",
		"invalidate comparisons across the jump; diff the two manifests; rerun the old checkpoint under the new harness (`kestrel replay RUN --probe --checkpoint step-N`, and the new under the old) to isolate a harness change from a model change.",
		"fixed_probe_loss of the old checkpoint is the same under the current code, and later evals move with val_loss again."},
	{RuleGapWidening, SEV2, "train–val gap widening",
		"train_val_gap (val_loss − train_loss_ema), positive at the start (a negative gap closing early in training is train_loss_ema catching up), widened at each of the last gap_widen_evals evals, by gap_widen nats in all, while val_loss improved by less than the gap widened (train loss falls more than twice as fast as val loss): the model fits the training stream faster than it generalises — overfitting (repeated data, epochs over a small source), a train/val distribution mismatch, or an eval bug (seed 000: train down, val up).",
		"train_val_gap and val_loss over the evals, epochs per source (repetition logs), near_dup_rate and train_val_overlap, slice_val_loss per source.",
		"check the eval construction first; then reduce repetition (more data, lower max_epochs), raise weight decay or dropout, or stop at the best val checkpoint.",
		"the gap stops widening while val_loss keeps improving."},
	{RuleSliceRegression, SEV2, "per-source validation regression",
		"a source's slice_val_loss rose at each of the last slice_regress_evals evals, by slice_regress_min nats in all, while the aggregate val_loss fell or rose by less than half as much: the average hides a regression of one domain (seed 004: slice regression). A source whose mixture weight a data stage lowered over those evals is expected to regress and is not reported.",
		"slice_val_loss of every source over the evals, source_mix_share (is the source still sampled at its weight?), the data stages, token_kl_drift, the source's epochs.",
		"check the mixture (mixture_drift, the stage weights) and the source's data (a filter or shard change); rebalance the mixture if the source is under-sampled.",
		"the source's slice_val_loss falls again at the next evals."},
	{RuleBenchRegression, SEV2, "benchmark regression",
		"an in-loop benchmark ([eval] tasks) got worse at each of the last bench_regress_evals benchmark evaluations — an accuracy (bench/<task>/acc, acc_norm) fell, a bits per byte (bpb/…) rose — by more than its noise in all: bench_regress_sigma standard errors of the difference for an accuracy, bench_regress_bpb of its value for bits per byte (seed 004: microbench regression; benchmarks can dip while the loss looks normal).",
		"the benchmark over the evaluations beside val_loss and slice_val_loss; the manifest's eval_hashes (eval/<task>: the benchmark's files) and tokenizer_hash across restarts; source_mix_share and the data stages; attention vitals and output_kl_to_prev over the same steps.",
		"triage in seed 004's order: (1) harness drift — did eval_hashes, the tokenizer or kestrel's version change (manifest_mismatch)? rerun the old checkpoint with `kestrel eval --run RUN --checkpoint step-N --tasks hellaswag` and compare; (2) data drift — a stage or mixture change (mixture_drift, slice_val_loss); (3) internal drift — attention logits/entropy, probe KL; (4) only then capacity. Small models sit near chance (HellaSwag 0.25, PIQA 0.5): a fall within noise is not a regression, raise eval.limit to shrink the standard error.",
		"the benchmark stops falling (or recovers) at the next evaluations; `kestrel eval --run RUN --checkpoint last` agrees with the in-loop number."},
	{RuleGarbageBatch, SEV2, "garbage batch",
		"one of the batch's data vitals left the band of the batches before it (median ± max(garbage_batch_sigma robust σ, a floor)): batch_token_entropy (random text up, repeated text down), batch_bytes_per_token (text the tokenizer did not learn — base64, another script, binary — falls), batch_nonletter_frac (digits, punctuation, symbols and control bytes: base64, markup, tables, binary rise), batch_max_token_run (padding, a stuck writer's repeated token). It is judged before the model sees the batch's loss, from the second step of a run, resume or rollback (wider floors while the window holds fewer than 16 batches); the window is frozen while batches are outside it, re-based at a data stage's start_step and after a lasting level change. The alert names the vitals outside, the batch's sources and documents; a loss spike that follows cites it. Random or repeated tokens that move the entropy by batch_entropy_shift are the SEV1 batch_anomaly instead.",
		"the batch's rows as text: `kestrel replay RUN --steps N:N --decode` (each row with its source and document ids), the vitals of the steps around it (metrics.jsonl), and the documents in the dataset's shards.",
		"if the rows are garbage: `kestrel replay RUN --steps N:N --json > bad.json`, `kestrel quarantine DATASET --from-replay bad.json --reason …`; the model has trained on one batch, so usually no rewind is needed — watch for a loss spike (its verdict cites this alert). If the rows are real text of an unusual kind (tables, code), nothing to do.",
		"the next batches are inside the band; after a quarantine, `kestrel replay RUN --steps N:N --decode` of a rerun from before N shows other documents."},
	{RuleValJump, SEV2, "validation loss jump",
		"one evaluation's val_loss is more than val_jump nats (and val_jump_frac of it) above the lowest of the (up to 3) evaluations before it: the model got worse between two evaluations — an update that damaged the weights without a train-loss spike the rules saw, a bad checkpoint resumed, an evaluation harness or data change (seed 004: val_ppl jump). An evaluation after a data stage's start_step is not compared (val_loss then weighs the new mixture), and neither is slow drift (val_regression watches that).",
		"val_loss, val_ppl and slice_val_loss at both evaluations (which source moved), the train loss, update_to_weight and grad_global_norm between them, resume events and manifest differences (eval files, tokenizer) between the two evaluations, fixed_probe_loss at both.",
		"find the step the damage happened (`kestrel replay RUN --probe --checkpoint step-N` for the checkpoints between the evaluations); if the model was damaged: `kestrel rewind RUN --to last-good --reason …` (with `--lr-scale 0.5 --lr-steps N` when update_to_weight rose) and rerun the same `kestrel train`; if the harness changed, invalidate comparisons across it.",
		"the next evaluation is back at or below the level before the jump."},
	{RuleRestartStorm, SEV2, "restart storm",
		"the run's manifest records restart_storm_starts or more starts (fresh start, resumes, automatic rollbacks) within restart_storm_minutes: the run is crash-looping or being restarted by hand or by a scheduler again and again, each start costing its start-up, a replay of the steps after the last checkpoint and the monitor's warm-up (seed 004: restart_rate storm).",
		"manifest.json's starts (time, step, resumed-from checkpoint, config hash), the log of each start's end (error, signal, OOM kill in dmesg, time limit), interventions.jsonl (automatic rollbacks).",
		"find why each start ended: a crash that repeats (fix it before restarting again), memory (lower train.batch_size or free memory), a scheduler that preempts; stop automatic restarts until the cause is known.",
		"the run trains past its last start's step without another restart within restart_storm_minutes."},
	{RuleCheckpointSize, SEV2, "checkpoint size jump",
		"a checkpoint is more than checkpoint_size_factor times larger or smaller than the median of the (up to 3) checkpoints before it. One run's checkpoints hold the same tensors and differ by a few bytes of state.json, so a jump means a changed model or optimizer layout, a missing or extra file, a truncated or padded tensor file, or another writer (seed 004: checkpoint size jump).",
		"the sizes of each file of both checkpoints (`ls -l`), their SHA256SUMS and state.json (model config, optimizer, format), the config hash and manifest of the starts between them.",
		"if the checkpoint verifies and the change is intended (a warm-start to another architecture), nothing; else do not resume from it: resume from the one before (`kestrel checkpoints RUN`), and find what changed the writer.",
		"the next checkpoints have the size of the earlier ones (or the new size, if intended)."},
	{RuleLMHeadGrowth, SEV2, "lm_head norm growth late in the cooldown",
		"late in the cooldown (learning_rate at most lm_head_late_lr of its peak and falling) lm_head_norm rose steadily over the last window steps, by more than lm_head_growth and faster than over the window before (a healthy head keeps growing in the cooldown, slower as the LR falls): the output projection grows while the LR decays, the pattern of the late, low-LR divergences a small z-loss stopped (seed 001, Marin 8B: lm_head norm explosion). The logits grow with it and the softmax saturates.",
		"lm_head_norm, logit_lse_mean and z_loss over the cooldown, param_norm/lm_head, the z-loss weight (model.z_loss) and weight decay in force, max_attn_logit.",
		"turn on or raise a small z-loss (model.z_loss, e.g. 1e-4, or [[optim.knobs]] z_loss from the step) or weight decay on the head, through `kestrel rewind RUN --to last-good --set model.z_loss=1e-4 --reason …`, and rerun the same `kestrel train`.",
		"lm_head_norm flattens over the rest of the cooldown; logit_lse_mean stops rising; no divergence at the end of the decay."},
	{RuleCheckpointSlow, SEV2, "checkpoint time growth",
		"a checkpoint took more than checkpoint_time_factor × the median checkpoint_time of the run's first (up to 3) checkpoints, and checkpoint_time_min seconds more: saving slows down (filling disk, a slow or remote filesystem, contention, a growing keep policy), which costs throughput at every checkpoint and risks a failed save (seed 004: spike/growth).",
		"checkpoint_time and checkpoint_size per checkpoint, free space and I/O load of the run directory's filesystem, what else writes to it.",
		"free space or move checkpoints to a faster local disk; checkpoint less often; keep fewer rolling checkpoints.",
		"the next checkpoints take their earlier time again."},
	{RuleOffTrack, SEV2, "off track: the loss left its own loss-vs-tokens fit",
		"train_loss_raw sits above the run's own fit L = E + A·(t/t0)^(−α) (loss_fit, fitted robustly to the stable phase after warm-up) by more than its noise — scaling_law_residual_z above off_track_z and scaling_law_residual above off_track_min — for off_track_steps consecutive judged steps: the run learns slower than it did (seed 004: scaling_law_residual drift) — a data change (a new shard, dedup or filter changes, contamination; a planned data stage switch starts the fit over instead), an optimizer or LR change (an intervention, a knob), a batch size change, or a bug. One noisy step does not move the median; warm-up and re-warm-up are not judged; a planned decay takes the loss below the fit, which never fires.",
		"loss_fit, loss_projection_final and scaling_law_residual over the run, the step the residual began to rise; source_mix_share, the data stages and token_kl_drift there; learning_rate, lr_scale and the knobs, batch_size; interventions.jsonl and manifest.json starts (a resume onto other data or code); grad_noise_scale against batch_size.",
		"not an emergency: find what changed at the step the residual began to rise. A data change: compare source_mix_share and the dataset manifest with the run's start, quarantine bad documents; an intervention or knob: check it was meant; if the model was damaged (val_loss rose too), `kestrel rewind RUN --to last-good --reason …`.",
		"scaling_law_residual falls back to about 0 (or the cause is understood and planned, e.g. a harder data stage); loss_projection_final stops rising."},
}

var runbookByRule = func() map[string]Runbook {
	m := map[string]Runbook{}
	for _, r := range runbooks {
		m[r.Rule] = r
	}
	return m
}()

// Runbooks returns every rule's runbook in severity order (a copy).
func Runbooks() []Runbook { return append([]Runbook(nil), runbooks...) }

// RunbookFor returns the runbook of a rule.
func RunbookFor(rule string) (Runbook, bool) {
	r, ok := runbookByRule[rule]
	return r, ok
}

func runbookText(rule string) string {
	if r, ok := runbookByRule[rule]; ok {
		return r.Text()
	}
	return rule
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
