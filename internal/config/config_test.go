package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadErrors(t *testing.T) {
	const src = "[[prepare.sources]]\nname = \"web\"\ninputs = [\"x.jsonl\"]\n"
	tests := []struct {
		name string
		file string
		want []string // substrings the error must contain
	}{
		{"unknown key", "[model]\nd_model = 64\nd_modle = 32\n", []string{"run.toml:3", `"model.d_modle"`, "unknown key"}},
		{"unknown section", "[modle]\nd_model = 64\n", []string{"run.toml:", "modle", "unknown key"}},
		{"wrong type", "[model]\n\nn_layers = \"four\"\n", []string{"run.toml:3", "n_layers"}},
		{"float for int", "[train]\nsteps = 1.5\n", []string{"run.toml:2", "steps"}},
		{"bad syntax", "[model\n", []string{"run.toml:1"}},
		// the per-source filter overlays are checked against clean.Config
		// at load time, so their errors name the file and line too
		{"unknown filter key", src + "[prepare.sources.filters.gopher_quality]\nmin_words = 20\nmin_wordz = 20\n", []string{"run.toml:6", "unknown key", "min_wordz"}},
		{"unknown inline filter key", src + "filters = { c4 = { enabled = false, line_min_wordz = 2 } }\n", []string{"run.toml:4", `unknown key "line_min_wordz" in a prepare.sources filters table`}},
		{"filter type error", src + "filters.gopher_quality.min_words = \"many\"\n", []string{"run.toml:4", "min_words"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTemp(t, tc.file)
			_, err := Load(p, nil)
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestLoadFilterOverlay: a valid filter overlay and map-valued sections
// (data.stages weights) load without errors from the overlay check.
func TestLoadFilterOverlay(t *testing.T) {
	p := writeTemp(t, "[[prepare.sources]]\nname = \"web\"\ninputs = [\"x.jsonl\"]\nfilters = { gopher_quality = { min_words = 20 } }\n"+
		"[[data.stages]]\nstart_step = 5\nweights = { web = 1.0 }\n")
	cfg, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Prepare.Sources[0].Filters["gopher_quality"]; !reflect.DeepEqual(got, map[string]any{"min_words": int64(20)}) {
		t.Fatalf("filters = %#v", got)
	}
}

func TestPrecedence(t *testing.T) {
	p := writeTemp(t, "[model]\nd_model = 64\nn_layers = 2\n[optim]\nlr = 0.5\n")
	cfg, err := Load(p, []Override{{Path: "model.d_model", Value: "96"}, {Path: "run.name", Value: "from-flag"}})
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"flag wins over file", cfg.Model.DModel, 96},
		{"file wins over default", cfg.Model.NLayers, 2},
		{"file float", cfg.Optim.LR, 0.5},
		{"string flag", cfg.Run.Name, "from-flag"},
		{"default kept", cfg.Model.NHeads, def.Model.NHeads},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestOverrideErrors(t *testing.T) {
	tests := []struct {
		o    Override
		want []string
	}{
		{Override{"model.d_model", "wide"}, []string{"--model.d_model=wide", "integer"}},
		{Override{"model.qk_norm", "maybe"}, []string{"--model.qk_norm", "true or false"}},
		{Override{"model.nope", "1"}, []string{"--model.nope", "unknown config field"}},
		{Override{"optim.lr", "fast"}, []string{"--optim.lr", "number"}},
	}
	for _, tc := range tests {
		cfg := Default()
		err := tc.o.Apply(&cfg)
		if err == nil {
			t.Fatalf("%v: expected an error", tc.o)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
		if !reflect.DeepEqual(cfg, Default()) {
			t.Errorf("%v: a failed override changed the config", tc.o)
		}
	}
}

func TestOverrideTypes(t *testing.T) {
	cfg := Default()
	for _, o := range []Override{
		{"model.qk_norm", "true"},
		{"optim.lr", "3e-4"},
		{"train.steps", "10"},
		{"run.name", `a "quoted" name`},
	} {
		if err := o.Apply(&cfg); err != nil {
			t.Fatalf("%v: %v", o, err)
		}
	}
	if !cfg.Model.QKNorm || cfg.Optim.LR != 3e-4 || cfg.Train.Steps != 10 || cfg.Run.Name != `a "quoted" name` {
		t.Fatalf("overrides not applied: %+v %+v %+v %+v", cfg.Model.QKNorm, cfg.Optim.LR, cfg.Train.Steps, cfg.Run.Name)
	}
}

func TestDefaultsRoundTrip(t *testing.T) {
	b, err := Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := Decode(b, "defaults", &back); err != nil {
		t.Fatalf("defaults do not parse back: %v\n%s", err, b)
	}
	if !sameConfig(t, back, Default()) {
		t.Fatalf("defaults changed in a round trip:\n got %+v\nwant %+v", back, Default())
	}
	// Also through a file written by WriteFile, as a run directory holds it.
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := WriteFile(p, Default()); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameConfig(t, cfg, Default()) {
		t.Fatal("resolved config file does not load back to the same config")
	}
}

func TestEveryFieldDocumented(t *testing.T) {
	for _, f := range Fields() {
		if strings.TrimSpace(f.Comment) == "" {
			t.Errorf("config field %s has no comment tag", f.Path)
		}
	}
}

func TestHashStable(t *testing.T) {
	a, err := Hash(Default())
	if err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.Optim.LR *= 2
	b, _ := Hash(cfg)
	a2, _ := Hash(Default())
	if a != a2 || a == b {
		t.Fatalf("hash not stable or not sensitive: %s %s %s", a, a2, b)
	}
}

// sameConfig compares configs by their canonical rendering, so a nil and an
// empty list (which TOML cannot tell apart) count as equal.
func sameConfig(t *testing.T, a, b Config) bool {
	t.Helper()
	ab, err := Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ab) == string(bb)
}
