package show

import (
	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/compare"
	"github.com/kestrel-lm/kestrel/internal/drill"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// The fixtures of the golden tests: one value of each kind a command
// prints, with the rows that take each branch of its printer.

func compareFixture() *compare.Report {
	se := 0.0123
	return &compare.Report{Pairs: []compare.Pair{{
		A: "runs/base", B: "runs/base/branches/lr", NameA: "base", NameB: "lr",
		Verdict: "B is better: val_loss −0.0400 (3.2 se)", Tokens: 1_234_567, SharedStep: 40,
		Train: &compare.Delta{Metric: "train_loss", A: 2.5, B: 2.4, Delta: -0.1, Align: "tokens", N: 20, StepA: 100, StepB: 100,
			TokensA: 1_234_567, TokensB: 1_234_567, Noise: "above noise", Better: "B"},
		Evals: []compare.Delta{{Metric: "val_loss", A: 2.61, B: 2.57, Delta: -0.04, StdErr: &se, Align: "step 100", StepA: 100, StepB: 100,
			TokensA: 1_200_000, TokensB: 1_200_000, Noise: "3.2 se"}},
		Alerts:        []compare.AlertCount{{Rule: "loss_spike", Severity: "SEV2", A: 3, B: 1}, {Rule: "grad_norm_high", Severity: "SEV3", A: 2, B: 2}},
		Interventions: []compare.InterventionRow{{Run: "B", ID: "rewind-1", Summary: "rewound 90 → 80"}},
		Config: []compare.FieldDiff{{Field: "optim.lr", A: "0.001", B: "0.0005"},
			{Field: "data.weights", A: "[0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25]", B: "[0.5, 0.5]"},
			{Field: "eval.heldout", Absent: "A"}},
	}, {
		A: "runs/a", B: "runs/b", NameA: "a", NameB: "b", Verdict: "identical", Identical: true,
		Config: nil, Manifest: []compare.FieldDiff{{Field: "dataset_hash", A: "0123456789abcdef0123456789abcdef0123456789abcdef0123", B: "fedcba"}},
	}}}
}

func checkpointsFixture() []checkpoint.Info {
	v, p := checkpoint.Num(2.71828), checkpoint.Num(2.5)
	return []checkpoint.Info{
		{Step: 100, TokensSeen: 409600, Kind: "rolling", Bytes: 512, Health: &checkpoint.Health{Status: checkpoint.HealthHealthy}, Status: checkpoint.Confirmed},
		{Step: 200, TokensSeen: 819200, Kind: "rolling", Bytes: 3 << 20, Health: &checkpoint.Health{Status: checkpoint.HealthHealthy, ValLoss: &v, ProbeLoss: &p, ValStep: 200},
			Status: checkpoint.Confirmed, LastGood: true},
		{Step: 300, TokensSeen: 1228800, Kind: "final", Bytes: 5 << 30, Health: &checkpoint.Health{Status: checkpoint.HealthHealthy}, Status: checkpoint.Rejected,
			Confirmation: &checkpoint.Confirmation{Status: checkpoint.Rejected, Reason: "probe out of band"}},
		{Step: 400, TokensSeen: 1638400, Kind: "rolling", Bytes: 2048, Health: &checkpoint.Health{Status: checkpoint.HealthHealthy}, Status: checkpoint.StatusPending},
		{Step: 500, Kind: "rolling", Health: &checkpoint.Health{Status: checkpoint.HealthUnknown}, Err: "state.json: unexpected EOF"},
	}
}

func drillFixture() *drill.Report {
	return &drill.Report{Steps: 100, Rows: []drill.Row{
		{Fault: "none", Moment: "healthy", LastGood: -1, Outcome: "clean", Finished: true, FinalVal: 2.5, CleanVal: 2.5},
		{Fault: "lr_spike", Moment: "warmup", FaultStep: 12, Detected: true, Latency: 2, Rule: "divergence", Severity: "SEV1",
			FalseAlarms: []string{"grad_norm_high"}, LastGood: 10, LastGoodOK: true, Outcome: "rescued", Finished: true, FinalVal: 2.55, CleanVal: 2.5, DeltaPct: 2},
		{Fault: "nan", Moment: "cooldown", FaultStep: 90, LastGood: 80, Outcome: "stopped", CleanVal: 2.5},
		{Fault: "stall", Moment: "after_rollback", NA: "no rollback in a clean branch", CleanVal: 2.5},
	}}
}

func incidentsFixture() []run.Incident {
	return []run.Incident{
		{ID: "inc-12", FromStep: 12, ToStep: 15, Rules: []string{"divergence", "nan_inf"}, Worst: "SEV0", State: "closed by rescue rewind-1"},
		{ID: "inc-140", FromStep: 140, ToStep: 140, Rules: []string{"loss_spike"}, Worst: "SEV1", State: "open"},
	}
}

func rewindFixtures() []*runlog.Intervention {
	return []*runlog.Intervention{
		{ID: "rewind-1", FromStep: 90, ToStep: 80, Checkpoint: "checkpoints/step-000080"},
		{ID: "rewind-2", FromStep: 150, ToStep: 120, Checkpoint: "checkpoints/step-000120", SkipFrom: 121, SkipTo: 140, SkipSteps: 20,
			LRScale: 0.5, LRSteps: 0, Set: map[string]string{"optim.lr": "0.0005", "monitor.window": "64"},
			ArchivedCheckpoints: []string{"step-000140"}, MetricsArchive: "metrics.rewind-2.jsonl", ArchivedLines: 30},
		{ID: "rewind-3", FromStep: 50, ToStep: 40, Checkpoint: "checkpoints/step-000040", LRScale: 0.1, LRSteps: 25},
	}
}
