package monitor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// batchVitalsOf fills a shakespeare-char-like step's batch vitals: the
// medians and robust spreads measured on 2,000 batches of 12×64 bytes of
// Tiny Shakespeare (entropy 3.27 ± 0.067 nats, non-letter share 0.048 ±
// 0.008, longest run 2–3, one byte per token), with the batches' heavier
// tails (up to 4σ).
func batchVitalsOf(rng *rand.Rand, v map[string]float64) {
	tail := func() float64 { return math.Max(-4, math.Min(4, rng.NormFloat64()*(1+0.3*rng.Float64()))) }
	v["batch_token_entropy"] = 3.27 + 0.067*tail()
	v["batch_nonletter_frac"] = math.Max(0.02, 0.048+0.0077*tail())
	v["batch_bytes_per_token"] = 1
	v["batch_max_token_run"] = float64(2 + rng.IntN(10)/9)
}

// base64Batch is the vitals of a batch of random base64 at byte level
// (12×64 bytes: 4.12 nats, 19% non-letter bytes).
func base64Batch(v map[string]float64) {
	v["batch_token_entropy"] = 4.12
	v["batch_nonletter_frac"] = 0.19
	v["batch_bytes_per_token"] = 1
	v["batch_max_token_run"] = 2
}

// TestGarbageBatch: a batch of random base64 raises garbage_batch (SEV2,
// not the SEV1 batch_anomaly: it moves the entropy by less than a nat) at
// its own step, at steps 2–5 of a fresh run, right after a resume (seeded
// or not) and after a rollback; its message names the vitals outside,
// the sources and the documents. A healthy run of 2,000 steps raises
// nothing.
func TestGarbageBatch(t *testing.T) {
	type moment struct {
		name        string
		start, at   int64
		seed        bool
		wantFewNote bool
	}
	moments := []moment{
		{"fresh step 2", 1, 2, false, true},
		{"fresh step 3", 1, 3, false, true},
		{"fresh step 4", 1, 4, false, false},
		{"fresh step 5", 1, 5, false, false},
		{"fresh step 40", 1, 40, false, false},
		{"resume at 200, +1, seeded", 201, 201, true, false},
		{"resume at 200, +2, not seeded", 201, 202, false, true},
		{"rollback to 100, +3, seeded", 101, 103, true, false},
	}
	for _, mo := range moments {
		t.Run(mo.name, func(t *testing.T) {
			m := newOptsMonitor(t, quietConfig(), Options{Vocab: 256})
			rng := rand.New(rand.NewPCG(11, uint64(mo.at)))
			c := newCurve(4)
			sample := func(s int64) Sample {
				smp := shakespeareLike(c, s)
				batchVitalsOf(rng, smp.Values)
				smp.Batch = &Batch{Sources: []string{"web", "web"}, DocIDs: []string{"web#17", "web#18"}}
				return smp
			}
			if mo.seed {
				var hist []Sample
				for s := int64(1); s < mo.start; s++ {
					hist = append(hist, sample(s))
				}
				m.Seed(hist)
			}
			var got []Alert
			for s := mo.start; s <= mo.at+20; s++ {
				smp := sample(s)
				if s == mo.at {
					base64Batch(smp.Values)
				}
				for _, a := range m.Observe(smp) {
					if a.Rule == RuleGarbageBatch || a.Rule == RuleBatchAnomaly {
						got = append(got, a)
					}
				}
			}
			if len(got) != 1 || got[0].Rule != RuleGarbageBatch || got[0].Step != mo.at || got[0].Severity != SEV2 {
				t.Fatalf("batch alerts %+v, want one SEV2 garbage_batch at step %d", got, mo.at)
			}
			msg := got[0].Message
			for _, want := range []string{"batch_nonletter_frac 0.19", "batch_token_entropy 4.12", "sources [web]", "documents [web#17,web#18]"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, "judged against only") != mo.wantFewNote {
				t.Errorf("few-batches note = %v, want %v: %s", !mo.wantFewNote, mo.wantFewNote, msg)
			}
		})
	}
}

// TestGarbageBatchQuietOnHealthy: 2,000 healthy shakespeare-char-like
// batches raise no batch alert.
func TestGarbageBatchQuietOnHealthy(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		m := newOptsMonitor(t, quietConfig(), Options{Vocab: 256})
		rng := rand.New(rand.NewPCG(seed, 5))
		c := newCurve(seed)
		for s := int64(1); s <= 2000; s++ {
			smp := shakespeareLike(c, s)
			batchVitalsOf(rng, smp.Values)
			for _, a := range m.Observe(smp) {
				if a.Rule == RuleGarbageBatch || a.Rule == RuleBatchAnomaly {
					t.Fatalf("seed %d: healthy batch at step %d raised %s: %s", seed, s, a.Rule, a.Message)
				}
			}
		}
	}
}

// TestBatchRulesOneAlertPerBatch: random tokens (entropy up by 2 nats)
// are the SEV1 batch_anomaly, carrying garbage_batch's other evidence,
// and no garbage_batch beside it; the window stays frozen over a poisoned
// window of 5 steps, so each of them is outside.
func TestBatchRulesOneAlertPerBatch(t *testing.T) {
	cfg := quietConfig()
	cfg.Cooldown = 1
	m := newOptsMonitor(t, cfg, Options{Vocab: 256})
	rng := rand.New(rand.NewPCG(3, 3))
	c := newCurve(3)
	var got []Alert
	for s := int64(1); s <= 60; s++ {
		smp := shakespeareLike(c, s)
		batchVitalsOf(rng, smp.Values)
		if s >= 30 && s < 35 {
			smp.Values["batch_token_entropy"], smp.Values["batch_nonletter_frac"] = 5.3, 0.77
		}
		for _, a := range m.Observe(smp) {
			if a.Rule == RuleGarbageBatch || a.Rule == RuleBatchAnomaly {
				got = append(got, a)
			}
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d batch alerts, want one per poisoned step (30-34): %+v", len(got), got)
	}
	for i, a := range got {
		if a.Rule != RuleBatchAnomaly || a.Severity != SEV1 || a.Step != int64(30+i) || !strings.Contains(a.Message, "also batch_nonletter_frac 0.77") {
			t.Errorf("alert %d: %s %s at step %d: %s", i, a.Severity, a.Rule, a.Step, a.Message)
		}
	}
}

// TestGarbageBatchKnowsStages: the vitals moving to a new level at a data
// stage's start_step raise nothing; the same move without a stage is one
// garbage_batch, and after levelShiftBatches batches at the new level the
// window takes it as the run's data.
func TestGarbageBatchKnowsStages(t *testing.T) {
	run := func(stages []MixStage) []Alert {
		m := newOptsMonitor(t, quietConfig(), Options{Vocab: 256, MixStages: stages})
		rng := rand.New(rand.NewPCG(8, 8))
		c := newCurve(8)
		var got []Alert
		for s := int64(1); s <= 300; s++ {
			smp := shakespeareLike(c, s)
			batchVitalsOf(rng, smp.Values)
			if s >= 150 { // code: more punctuation, lower entropy
				smp.Values["batch_nonletter_frac"] += 0.12
				smp.Values["batch_token_entropy"] -= 0.4
			}
			got = append(got, only(m.Observe(smp), RuleGarbageBatch)...)
		}
		return got
	}
	stages := []MixStage{{StartStep: 1, Weights: map[string]float64{"web": 1}}, {StartStep: 150, Weights: map[string]float64{"web": 0.5, "code": 0.5}}}
	if got := run(stages); len(got) != 0 {
		t.Fatalf("a planned stage raised %+v", got)
	}
	got := run(nil)
	if len(got) != 1 || got[0].Step != 150 {
		t.Fatalf("an unplanned level change raised %+v, want one garbage_batch at step 150", got)
	}
}

// TestSpikeCitesGarbageBatch: a loss spike the step after a garbage batch
// cites it, in the spike alert and in the verdict; a spike with no
// garbage batch before it does not.
func TestSpikeCitesGarbageBatch(t *testing.T) {
	for _, garbage := range []bool{true, false} {
		cfg := testConfig()
		m := newOptsMonitor(t, cfg, Options{})
		rng := rand.New(rand.NewPCG(2, 2))
		c := newCurve(2)
		var spike, verdict *Alert
		for s := int64(1); s <= 140; s++ {
			smp := c.sample(s)
			batchVitalsOf(rng, smp.Values)
			if s == 100 && garbage {
				base64Batch(smp.Values)
			}
			if s == 101 {
				smp.Values["train_loss_raw"] *= 1.6
			}
			for _, a := range m.Observe(smp) {
				switch a.Rule {
				case RuleLossSpike:
					spike = &a
				case RuleSpikeVerdict:
					verdict = &a
				}
			}
		}
		if spike == nil || verdict == nil {
			t.Fatalf("garbage %v: spike %v, verdict %v", garbage, spike, verdict)
		}
		for _, a := range []*Alert{spike, verdict} {
			if cites := strings.Contains(a.Message, "garbage batch: step 100, batch_token_entropy 4.12"); cites != garbage {
				t.Errorf("garbage %v: %s cites it: %v: %s", garbage, a.Rule, cites, a.Message)
			}
		}
	}
}

// TestGarbageBatchLongWindow: a garbage window longer than
// levelShiftBatches raises garbage_batch at its start, the window then
// takes the new level, and the text after the garbage window is no alert:
// it is back at the level before.
func TestGarbageBatchLongWindow(t *testing.T) {
	m := newOptsMonitor(t, quietConfig(), Options{Vocab: 256})
	rng := rand.New(rand.NewPCG(9, 9))
	c := newCurve(9)
	var got []Alert
	for s := int64(1); s <= 200; s++ {
		smp := shakespeareLike(c, s)
		batchVitalsOf(rng, smp.Values)
		if s >= 100 && s < 130 {
			base64Batch(smp.Values)
		}
		got = append(got, only(m.Observe(smp), RuleGarbageBatch)...)
	}
	if len(got) != 1 || got[0].Step != 100 {
		t.Fatalf("garbage_batch %+v, want one at step 100 (the window's start) and none when the text returns at 130", got)
	}
}
