package monitor

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestRegistryPanels: every panel and plot a metric names exists, every
// panel and plot draws something, and the patterns compile.
func TestRegistryPanels(t *testing.T) {
	panelIDs, plotFiles := map[string]bool{}, map[string]bool{}
	for _, g := range PanelGroups() {
		for _, p := range g.Panels {
			if panelIDs[p.ID] {
				t.Errorf("panel %s twice", p.ID)
			}
			panelIDs[p.ID] = true
			if len(p.Match) == 0 {
				t.Errorf("panel %s draws no registered metric", p.ID)
			}
			for _, e := range p.Match {
				if _, err := regexp.Compile(e); err != nil {
					t.Errorf("panel %s: %v", p.ID, err)
				}
			}
			if p.Split && p.SplitRe == "" {
				t.Errorf("split panel %s has no split pattern", p.ID)
			}
		}
	}
	for _, p := range Plots() {
		plotFiles[p.File] = true
		if len(p.Match) == 0 {
			t.Errorf("plot %s draws no registered metric", p.File)
		}
	}
	for _, m := range Metrics() {
		for _, id := range []string{m.Panel, m.VariantPanel} {
			if id != "" && !panelIDs[id] {
				t.Errorf("%s: unknown panel %q", m.Name, id)
			}
		}
		if m.Plot != "" && !plotFiles[m.Plot] {
			t.Errorf("%s: unknown plot %q", m.Name, m.Plot)
		}
		if m.VariantPlot != "" && (!plotFiles[m.VariantPlot] || m.VariantPanel == "") {
			t.Errorf("%s: variant plot %q unknown or without a variant panel", m.Name, m.VariantPlot)
		}
		if m.Plot != "" && m.Panel == "" && m.VariantPanel == "" {
			t.Errorf("%s: in plot %s but in no panel", m.Name, m.Plot)
		}
		for _, a := range m.Aliases {
			if _, ok := Lookup(a); ok {
				t.Errorf("%s: alias %s is itself a registered name", m.Name, a)
			}
		}
	}
}

// TestPanelMatch: names land in the panel and plot the registry says.
func TestPanelMatch(t *testing.T) {
	in := func(name string, match []string) bool {
		for _, e := range match {
			if regexp.MustCompile(e).MatchString(name) {
				return true
			}
		}
		return false
	}
	panels := map[string][]string{}
	for _, g := range PanelGroups() {
		for _, p := range g.Panels {
			panels[p.ID] = p.Match
		}
	}
	plotsBy := map[string][]string{}
	for _, p := range Plots() {
		plotsBy[p.File] = p.Match
	}
	tests := []struct {
		name, panel, plot string
		want              bool
	}{
		{"max_attn_logit", "maxlogit", "attention.png", true},
		{"max_attn_logit/layer3/head1", "maxlogitL", "", true},
		{"max_attn_logit/layer3/head1", "maxlogit", "attention.png", false},
		{"max_attn_logit/layer3", "", "attention.png", true},
		{"lr", "lr", "lr.png", true},
		{"update_norm/layer0", "update", "norms.png", false},
		{"update_norm/layer0", "updateL", "update_layers.png", true},
		{"update_norm/embed", "updateL", "update_layers.png", true},
		{"update_norm/lm_head", "updateL", "update_layers.png", true},
		{"update_norm", "updateL", "update_layers.png", false},
		{"param_norm/layer2", "param", "", true},
		{"adam_m_norm", "adamm", "adam_m.png", true},
		{"adam_m_norm/layer1", "adamm", "adam_m.png", true},
		{"adam_v_norm/embed", "adamv", "adam_v.png", true},
		{"adam_v_norm/embed", "", "adam_m.png", false},
		{"max_attn_logit/embed", "", "attention.png", false},
		{"train_loss_raw", "train", "", true},
		{"train_loss_raw", "", "loss.png", false},
		{"topk_mass_probe", "", "probe.png", false},
		{"source_mix_share/web", "mix", "mix.png", true},
		{"source_mix_share", "mix", "", false},
	}
	for _, tc := range tests {
		if tc.panel != "" && in(tc.name, panels[tc.panel]) != tc.want {
			t.Errorf("%s in panel %s: %v, want %v", tc.name, tc.panel, !tc.want, tc.want)
		}
		if tc.plot != "" && in(tc.name, plotsBy[tc.plot]) != tc.want {
			t.Errorf("%s in plot %s: %v, want %v", tc.name, tc.plot, !tc.want, tc.want)
		}
	}
}

// matchesVariant reports whether suffix (the part after "name/") fits one
// of m's variant patterns: {L} and {H} stand for indices, <source> for any
// name, anything else for itself.
func matchesVariant(m Metric, suffix string) bool {
	for _, v := range m.Variants {
		re := regexp.QuoteMeta(v)
		re = strings.NewReplacer(regexp.QuoteMeta("{L}"), `\d+`, regexp.QuoteMeta("{H}"), `\d+`, regexp.QuoteMeta("<source>"), `.+`).Replace(re)
		if regexp.MustCompile("^" + re + "$").MatchString(suffix) {
			return true
		}
	}
	return false
}

// fillAll sets every settable field of the struct v points at to a
// non-zero, finite value, so that optional fields are written too.
func fillAll(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Float64:
			f.SetFloat(0.5)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("x")
		case reflect.Pointer:
			if f.Type().Elem().Kind() == reflect.Float64 {
				x := 0.5
				f.Set(reflect.ValueOf(&x))
			}
		}
	}
}

// notMetrics are keys of kestrel's metrics lines that are axes or labels,
// not metrics: the registry need not know them.
var notMetrics = map[string]bool{"step": true, "wall_time": true, "unix_time": true, "skip_reason": true, "event": true, "message": true, "checkpoint_kind": true, "checkpoint_error": true}

// TestTrainerKeysRegistered: every key kestrel train writes to
// metrics.jsonl and hands the monitor — fully populated step, eval,
// checkpoint and NaN-stop records — is a registry name, per-layer/head and
// per-source variants by their base name.
func TestTrainerKeysRegistered(t *testing.T) {
	var st runlog.Step
	fillAll(reflect.ValueOf(&st).Elem())
	st.PerLayer = map[string]float64{"max_attn_logit/layer3/head1": 1, "attn_entropy/layer0/head0": 1, "residual_rms/layer1": 1, "activation_outlier_rate/layer1": 1}
	// The per-layer optimizer norms as internal/train's fillOptimNorms
	// names them (its TestLayerGroup pins the group names).
	for _, base := range []string{"update_norm", "param_norm", "adam_m_norm", "adam_v_norm"} {
		for _, g := range []string{"embed", "layer0", "layer11", "lm_head"} {
			st.PerLayer[base+"/"+g] = 1
		}
	}
	st.SourceMixShare = map[string]float64{"web": 0.5}
	var ev runlog.Eval
	fillAll(reflect.ValueOf(&ev).Elem())
	ev.SliceValLoss = map[string]float64{"web": 2}
	var ck runlog.Checkpoint
	fillAll(reflect.ValueOf(&ck).Elem())
	nan := runlog.NaNStop{Step: 3, Message: "loss is NaN"}

	emitted := map[string]bool{}
	for _, l := range []runlog.Line{&st, &ev, &ck, &nan} {
		var line map[string]any
		if err := json.Unmarshal(runlog.AppendLine(nil, l), &line); err != nil {
			t.Fatal(err)
		}
		for k := range line {
			emitted[k] = true
		}
		for k := range runlog.Values(l, nil) {
			emitted[k] = true
		}
	}
	for k := range emitted {
		if notMetrics[k] {
			continue
		}
		m, ok := Lookup(k)
		if !ok {
			t.Errorf("kestrel train emits %q, which is not in the metric registry", k)
			continue
		}
		if k != m.Name && len(m.Variants) == 0 {
			t.Errorf("%q: %s has no variants in the registry", k, m.Name)
		}
		if k != m.Name && !matchesVariant(m, k[len(m.Name)+1:]) {
			t.Errorf("%q: suffix matches none of %s's variants %q", k, m.Name, m.Variants)
		}
	}
	for _, k := range []string{"source_mix_share/web", "slice_val_loss/web", "max_attn_logit/layer3/head1", "val_loss_ema",
		"update_clip_threshold", "output_kl_to_prev", "checkpoint_size", "nan_inf_events", "fixed_probe_loss",
		"adam_m_norm", "adam_v_norm", "update_norm/embed", "adam_v_norm/lm_head"} {
		if !emitted[k] {
			t.Errorf("the test emitted no %q: is the population incomplete?", k)
		}
	}
}
