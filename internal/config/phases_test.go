package config

import (
	"strings"
	"testing"
)

// TestPhaseSchedule: [[optim.phases]] entries and optim.warmup_fraction
// load, survive the resolved config's round trip, set from the command
// line as the --set of kestrel rewind does (an inline array of tables),
// leave a config without them (and its hash) as it was, and an unknown
// key in an entry is refused naming the file, the line and the key; both
// warm-ups set is refused naming both fields.
func TestPhaseSchedule(t *testing.T) {
	const good = "[optim]\nwarmup_steps = 0\nwarmup_fraction = 0.01\n\n[[optim.phases]]\nstep = 200\nkind = \"wsds\"\nwsds_period = 50\nwsds_decay_steps = 5\n\n[[optim.phases]]\nstep = 400\nkind = \"rewarm\"\nfrom = \"current\"\npeak = 2e-3\nsteps = 20\n"
	cfg, err := Load(writeTemp(t, good), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Optim.Phases
	if len(p) != 2 || p[0].Kind != "wsds" || p[0].WSDSPeriod != 50 || p[0].Peak != nil || p[1].Peak == nil || *p[1].Peak != 2e-3 || p[1].From != "current" || cfg.Optim.WarmupFraction != 0.01 {
		t.Fatalf("decoded %+v, warmup_fraction %g", p, cfg.Optim.WarmupFraction)
	}
	if err := cfg.Optim.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(writeTemp(t, string(b)), nil)
	if err != nil {
		t.Fatalf("resolved config does not load back: %v\n%s", err, b)
	}
	if !sameConfig(t, cfg, back) {
		t.Fatalf("round trip changed the phases:\n%s", b)
	}
	set := Default()
	set.Optim.Warmup = 0
	if err := (Override{Path: "optim.phases", Value: `[{step = 200, kind = "wsds", wsds_period = 50, wsds_decay_steps = 5}, {step = 400, kind = "rewarm", from = "current", peak = 2e-3, steps = 20}]`}).Apply(&set); err != nil {
		t.Fatal(err)
	}
	set.Optim.WarmupFraction = 0.01
	if !sameConfig(t, set, cfg) {
		t.Errorf("--set optim.phases gave %+v, the file %+v", set.Optim.Phases, cfg.Optim.Phases)
	}
	d, err := Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d), "[[optim.phases]]") || strings.Contains(string(d), "warmup_fraction =") {
		t.Error("a config without phases renders optim.phases or optim.warmup_fraction: its config_hash would change")
	}
	if _, err := Load(writeTemp(t, good+"peek = 1\n"), nil); err == nil || !strings.Contains(err.Error(), "run.toml:17") || !strings.Contains(err.Error(), "peek") {
		t.Errorf("unknown key in an entry: %v", err)
	}
	both := Default()
	both.Optim.WarmupFraction = 0.01
	if err := both.Optim.Validate(); err == nil || !strings.Contains(err.Error(), "optim.warmup_fraction (0.01) and optim.warmup_steps (100) are both set") {
		t.Errorf("both warm-ups: %v", err)
	}
}
