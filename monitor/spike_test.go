package monitor

import (
	"strings"
	"testing"
)

// TestSpikeClassifierShapes runs the seed-000 flowchart on synthetic curves
// of each shape.
func TestSpikeClassifierShapes(t *testing.T) {
	const at = 200
	cases := []struct {
		name      string
		mutate    func(s int64, smp *Sample)
		verdict   string
		sev       Severity
		precursor string
		wantText  []string
	}{
		{"recoverable with update-norm precursor", func(s int64, smp *Sample) {
			if s == at-1 {
				smp.Values["update_norm"] = 1.0 // 10× the band, one step before the loss
			}
			if s >= at && s < at+3 {
				smp.Values["train_loss_raw"] += 1.0
			}
		}, VerdictRecoverable, SEV2, "update norm preceded loss by 1 step", nil},
		{"logging artifact", func(s int64, smp *Sample) {
			if s >= at {
				smp.Values["train_loss_raw"] += 0.5
			}
		}, VerdictArtifact, SEV2, "no grad/update-norm spike preceded it", nil},
		{"data event", func(s int64, smp *Sample) {
			if s >= at {
				smp.Values["train_loss_raw"] += 0.5
				if v, ok := smp.Values["val_loss"]; ok {
					smp.Values["val_loss"] = v + 0.3
				}
			}
			if s == at {
				smp.Batch = &Batch{Sources: []string{"web", "forum"}, DocIDs: []string{"forum/123", "web/9"}}
			}
		}, VerdictDataEvent, SEV1, "no grad/update-norm spike preceded it", []string{"forum/123", "norms back to normal"}},
		{"data event: a recovered spike on a source the run had not been seeing", func(s int64, smp *Sample) {
			smp.Batch = &Batch{Sources: []string{"books", "books", "books", "web"}}
			if s >= at && s < at+3 {
				smp.Values["train_loss_raw"] += 1.0
				smp.Batch = &Batch{Sources: []string{"garbage", "garbage", "garbage", "books"}, DocIDs: []string{"garbage:7"}}
			}
		}, VerdictDataEvent, SEV1, "no grad/update-norm spike preceded it", []string{"data shift: garbage: 75% of the batch, 0% of the"}},
		{"data event: the bad batch's own gradient spike is no precursor", func(s int64, smp *Sample) {
			smp.Batch = &Batch{Sources: []string{"books", "books", "books", "web"}}
			if s >= at && s < at+3 {
				smp.Values["train_loss_raw"] += 1.0
				smp.Values["grad_global_norm"] = 2.0
				smp.Batch = &Batch{Sources: []string{"garbage", "garbage", "garbage", "garbage"}}
			}
		}, VerdictDataEvent, SEV1, "grad norm spiked at the same step as the loss", []string{"data shift: garbage: 100% of the batch"}},
		{"recoverable: a norm spiked before the loss", func(s int64, smp *Sample) {
			smp.Batch = &Batch{Sources: []string{"books", "books", "books", "web"}}
			if s == at-1 {
				smp.Values["update_norm"] = 1.0
			}
			if s >= at && s < at+3 {
				smp.Values["train_loss_raw"] += 1.0
				smp.Batch = &Batch{Sources: []string{"garbage", "garbage", "garbage", "garbage"}}
			}
		}, VerdictRecoverable, SEV2, "update norm preceded loss by 1 step", []string{"data shift: garbage"}},
		{"recoverable: the same spike on the usual data", func(s int64, smp *Sample) {
			smp.Batch = &Batch{Sources: []string{"books", "books", "books", "web"}}
			if s >= at && s < at+3 {
				smp.Values["train_loss_raw"] += 1.0
			}
		}, VerdictRecoverable, SEV2, "no grad/update-norm spike preceded it", nil},
		{"recoverable: a minority of new data", func(s int64, smp *Sample) {
			smp.Batch = &Batch{Sources: []string{"books", "books", "books", "web"}}
			if s >= at && s < at+3 {
				smp.Values["train_loss_raw"] += 1.0
				smp.Batch = &Batch{Sources: []string{"garbage", "books", "books", "web"}}
			}
		}, VerdictRecoverable, SEV2, "no grad/update-norm spike preceded it", nil},
		{"structural instability", func(s int64, smp *Sample) {
			if s >= at-2 {
				smp.Values["grad_global_norm"] = 2.0
			}
			if s >= at {
				smp.Values["train_loss_raw"] += 0.5
				if v, ok := smp.Values["val_loss"]; ok {
					smp.Values["val_loss"] = v + 0.3
				}
			}
		}, VerdictStructural, SEV1, "grad norm preceded loss by 2 steps", []string{"norms stayed elevated"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMonitor(t, testConfig(), t.TempDir())
			c := newCurve(4)
			var detect, verdict []Alert
			for s := int64(1); s <= 320; s++ {
				smp := c.sample(s)
				if s%25 == 0 {
					smp.Values["val_loss"] = 3.2 + 2*expNeg(s)
				}
				tc.mutate(s, &smp)
				for _, a := range m.Observe(smp) {
					switch a.Rule {
					case RuleLossSpike:
						detect = append(detect, a)
					case RuleSpikeVerdict:
						verdict = append(verdict, a)
					}
				}
			}
			if len(detect) != 1 || detect[0].Step != at || detect[0].Severity != SEV1 {
				t.Fatalf("detections %+v", detect)
			}
			if !strings.Contains(detect[0].Message, tc.precursor) {
				t.Errorf("detection message %q lacks %q", detect[0].Message, tc.precursor)
			}
			if len(verdict) != 1 {
				t.Fatalf("verdicts %+v", verdict)
			}
			v := verdict[0]
			if v.Verdict != tc.verdict || v.Severity != tc.sev {
				t.Errorf("verdict %q %s, want %q %s (%s)", v.Verdict, v.Severity, tc.verdict, tc.sev, v.Message)
			}
			for _, w := range append(tc.wantText, tc.precursor) {
				if !strings.Contains(v.Message, w) {
					t.Errorf("verdict message %q lacks %q", v.Message, w)
				}
			}
		})
	}
}

func expNeg(s int64) float64 {
	x := 1.0
	// exp(-s/200) by the curve's own formula, without importing math twice.
	for i := int64(0); i < s; i++ {
		x *= 0.995012479192682
	}
	return x
}

func TestSpikeNoiseAndClusters(t *testing.T) {
	cfg := testConfig()
	cfg.ClusterWindow = 200
	m := newTestMonitor(t, cfg, t.TempDir())
	c := newCurve(5)
	var spikes, clusters int
	for s := int64(1); s <= 400; s++ {
		smp := c.sample(s)
		if s == 150 || s == 200 || s == 250 {
			smp.Values["train_loss_raw"] += 1
		}
		for _, a := range m.Observe(smp) {
			switch a.Rule {
			case RuleLossSpike:
				spikes++
			case RuleSpikeCluster:
				clusters++
				if a.Step != 250 || a.Severity != SEV1 {
					t.Errorf("cluster alert %+v", a)
				}
			}
		}
	}
	if spikes != 3 || clusters != 1 {
		t.Fatalf("spikes %d clusters %d, want 3 and 1", spikes, clusters)
	}
}

func TestSpikeFlushUndetermined(t *testing.T) {
	m := newTestMonitor(t, testConfig(), t.TempDir())
	c := newCurve(6)
	for s := int64(1); s <= 230; s++ {
		smp := c.sample(s)
		if s >= 200 {
			smp.Values["train_loss_raw"] += 0.5
		}
		m.Observe(smp)
	}
	as := m.Flush()
	if len(as) != 1 || as[0].Verdict != VerdictUndetermined {
		t.Fatalf("flush %+v", as)
	}
}

// TestSpikeNamesLayerPrecursor: per-layer update norms on synthetic
// samples; the loss-spike alert and the verdict name the layer whose update
// norm jumped first within spike_lookback, with its rise and step.
func TestSpikeNamesLayerPrecursor(t *testing.T) {
	const at = 200
	layers := []string{"embed", "layer0", "layer1", "layer2", "lm_head"}
	cases := []struct {
		name  string
		jumps map[string]map[int64]float64 // layer -> step -> factor
		want  []string
		not   []string
	}{
		{"lower layer first", map[string]map[int64]float64{"layer0": {at - 3: 8, at - 2: 8}, "layer2": {at - 1: 3}},
			[]string{"update norm preceded loss by 1 step", "update_norm/layer0 rose ×8 at step 197, 3 steps before the loss", "(2 layers' update norms jumped)"}, nil},
		{"tie: the larger rise", map[string]map[int64]float64{"lm_head": {at - 2: 4}, "embed": {at - 2: 20}},
			[]string{"update_norm/embed rose ×20 at step 198, 2 steps before the loss"}, []string{"lm_head"}},
		{"same step", map[string]map[int64]float64{"layer1": {at: 5}},
			[]string{"update_norm/layer1 rose ×5 at step 200, at the same step as the loss"}, nil},
		{"outside the lookback", map[string]map[int64]float64{"layer0": {at - 9: 8}},
			[]string{"update norm preceded loss by 1 step"}, []string{"update_norm/"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMonitor(t, testConfig(), t.TempDir())
			c := newCurve(4)
			var msgs []string
			for s := int64(1); s <= 260; s++ {
				smp := c.sample(s)
				for _, l := range layers {
					f := 1.0
					if x, ok := tc.jumps[l][s]; ok {
						f = x
					}
					smp.Values["update_norm/"+l] = 0.05 * f
				}
				if s == at-1 {
					smp.Values["update_norm"] = 1.0 // the global norm too, one step before the loss
				}
				if s >= at && s < at+3 {
					smp.Values["train_loss_raw"] += 1.0
				}
				for _, a := range m.Observe(smp) {
					if a.Rule == RuleLossSpike || a.Rule == RuleSpikeVerdict {
						if a.Step != at {
							t.Errorf("%s at step %d: %s", a.Rule, a.Step, a.Message)
						}
						msgs = append(msgs, a.Message)
					}
				}
			}
			if len(msgs) != 2 {
				t.Fatalf("want a detection and a verdict, got %q", msgs)
			}
			for _, msg := range msgs {
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q lacks %q", msg, w)
					}
				}
				for _, w := range tc.not {
					if strings.Contains(msg, w) {
						t.Errorf("message %q has %q", msg, w)
					}
				}
			}
		})
	}
}

// TestLayerPrecursorWithoutGlobal: a layer's jump that the global norms do
// not show is still named, and the text says the global norms were quiet.
func TestLayerPrecursorWithoutGlobal(t *testing.T) {
	c := NewSpikeClassifier(testConfig())
	var det *Spike
	for s := int64(1); s <= 60; s++ {
		norms := map[string]float64{"update_norm": 0.1, "update_norm/layer0": 0.01, "update_norm/layer1": 0.2}
		if s == 48 {
			norms["update_norm/layer0"] = 0.06
		}
		loss := 3.0 + 0.001*float64(s%3)
		if s == 50 {
			loss = 6
		}
		if d, _ := c.Step(s, loss, norms, nil); d != nil {
			det = d
		}
	}
	if det == nil || det.Step != 50 {
		t.Fatalf("spike %+v", det)
	}
	want := "no global grad/update-norm spike preceded it; update_norm/layer0 rose ×6 at step 48, 2 steps before the loss"
	if got := det.PrecursorText(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
