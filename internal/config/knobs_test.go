package config

import (
	"strings"
	"testing"
)

// TestKnobSchedule: [[optim.knobs]] entries load with unset knobs left
// nil, survive the resolved config's round trip, leave a config without a
// schedule (and its hash) as it was, and an unknown knob or a value of
// the wrong type is refused naming the file, the line and the key.
func TestKnobSchedule(t *testing.T) {
	const good = "[[optim.knobs]]\nstep = 56400\nmax_grad_norm = 0.2\n\n[[optim.knobs]]\nstep = 72200\nclip_update_norm = true\n"
	cfg, err := Load(writeTemp(t, good), nil)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Optim.Knobs
	if len(k) != 2 || k[0].Step != 56400 || k[0].MaxGradNorm == nil || *k[0].MaxGradNorm != 0.2 || k[0].ClipUpdateNorm != nil ||
		k[1].Step != 72200 || k[1].MaxGradNorm != nil || k[1].ClipUpdateNorm == nil || !*k[1].ClipUpdateNorm {
		t.Fatalf("decoded %+v", k)
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
		t.Fatalf("round trip changed the schedule:\n%s", b)
	}
	d, err := Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d), "knobs") {
		t.Error("a config without a schedule renders an optim.knobs entry: its config_hash would change")
	}

	for _, tc := range []struct{ name, file string }{
		{"unknown knob", good + "update_clip = true\n"},
		{"wrong type", good + "lr_scale = \"half\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeTemp(t, tc.file), nil)
			if err == nil {
				t.Fatal("expected an error")
			}
			key := map[string]string{"unknown knob": "update_clip", "wrong type": "lr_scale"}[tc.name]
			for _, w := range []string{"run.toml:8", key} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
