package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
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

// floatFields lists every float leaf field of the config and every list of
// floats, found by reflection, so a new float field is covered without
// being named here.
func floatFields(t *testing.T) (scalars, lists []string) {
	t.Helper()
	for _, f := range Fields() {
		switch k := f.Type.Kind(); {
		case k == reflect.Float32 || k == reflect.Float64:
			scalars = append(scalars, f.Path)
		case k == reflect.Slice && (f.Type.Elem().Kind() == reflect.Float64 || f.Type.Elem().Kind() == reflect.Float32):
			lists = append(lists, f.Path)
		}
	}
	if len(scalars) < 20 || len(lists) == 0 {
		t.Fatalf("found %d float fields and %d float lists: the walk is broken", len(scalars), len(lists))
	}
	return scalars, lists
}

// TestNonFiniteRefused: nan, inf and -inf are refused for every float field,
// from a --section.key flag (the error names the flag) and from a file (the
// error names the file, the line and the key), including floats inside
// lists, arrays of tables and maps; nothing panics and a refused flag
// leaves the config as it was.
func TestNonFiniteRefused(t *testing.T) {
	scalars, lists := floatFields(t)
	for _, bad := range []string{"nan", "inf", "-inf", "+nan"} {
		for _, path := range scalars {
			t.Run("flag/"+path+"="+bad, func(t *testing.T) {
				cfg := Default()
				err := Override{path, bad}.Apply(&cfg)
				want := "flag --" + path + "=" + bad + ": want a finite number"
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want %q", err, want)
				}
				if !sameConfig(t, cfg, Default()) {
					t.Fatal("a refused flag changed the config")
				}
			})
			t.Run("file/"+path+"="+bad, func(t *testing.T) {
				dot := strings.LastIndex(path, ".")
				p := writeTemp(t, "# comment\n["+path[:dot]+"]\n"+path[dot+1:]+" = "+bad+"\n")
				_, err := Load(p, nil)
				want := fmt.Sprintf("run.toml:3: key %q: not a finite number", path)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want %q", err, want)
				}
			})
		}
		for _, path := range lists {
			t.Run("flag/"+path+"=[..."+bad+"]", func(t *testing.T) {
				cfg := Default()
				err := Override{path, "[0.5, " + bad + "]"}.Apply(&cfg)
				want := path + "[1]: want a finite number"
				if err == nil || !strings.Contains(err.Error(), "flag --"+path) || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want the flag and %q", err, want)
				}
			})
		}
	}
	// floats inside arrays of tables and maps
	for _, tc := range []struct{ name, file, want string }{
		{"data.sources weight", "[[data.sources]]\nname = \"a\"\nweight = 1.0\n[[data.sources]]\nname = \"b\"\nweight = nan\n", `run.toml:6: key "data.sources[1].weight"`},
		{"data.sources max_epochs", "[data]\nsources = [{name = \"a\", weight = 1.0, max_epochs = inf}]\n", `run.toml:2: key "data.sources[0].max_epochs"`},
		{"data.stages weights", "[[data.stages]]\nstart_step = 5\nweights = { web = 1.0, code = -inf }\n", `run.toml:3: key "data.stages[0].weights.code"`},
		{"monitor.mix_targets", "[monitor.mix_targets]\nweb = nan\n", `run.toml:2: key "monitor.mix_targets.web"`},
		{"prepare filter overlay", "[[prepare.sources]]\nname = \"web\"\ninputs = [\"x.jsonl\"]\nfilters.gopher_quality.max_symbol_word_ratio = nan\n", `run.toml:4: key "prepare.sources[0].filters.gopher_quality.max_symbol_word_ratio"`},
		{"list", "[optim]\nmultistep_at = [0.5,\n inf]\n", `run.toml:3: key "optim.multistep_at[1]"`},
	} {
		t.Run("file/"+tc.name, func(t *testing.T) {
			_, err := Load(writeTemp(t, tc.file), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want+": not a finite number") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckFinite: the reflection walk over the resolved config names every
// non-finite float by its path, in structs, lists, arrays of tables, maps
// and interface values, and passes the defaults.
func TestCheckFinite(t *testing.T) {
	if err := CheckFinite(Default()); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cfg := Default()
	cfg.Optim.MaxGradNorm = math.NaN()
	cfg.Train.ValFraction = math.Inf(-1)
	cfg.Optim.MultistepFactors = []float64{0.5, math.Inf(1)}
	cfg.Data.Sources = []loader.SourceConfig{{Name: "a", Weight: 1}, {Name: "b", Weight: math.NaN()}}
	cfg.Data.Stages = []loader.Stage{{StartStep: 5, Weights: map[string]float64{"a": 1, "b": math.Inf(1)}}}
	cfg.Prepare.Sources = []prepare.Source{{Name: "web", Filters: map[string]any{"c4": map[string]any{"x": math.NaN()}}}}
	err := CheckFinite(cfg)
	for _, w := range []string{"optim.max_grad_norm = NaN", "train.val_fraction = -Inf", "optim.multistep_factors[1] = +Inf",
		"data.sources[1].weight = NaN", "data.stages[0].weights.b = +Inf", "prepare.sources[0].filters.c4.x = NaN"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not name %q", err, w)
		}
	}
}

// TestDefaultsDocumentEveryField: kestrel config --defaults shows every
// field, those empty by default as a documented comment.
func TestDefaultsDocumentEveryField(t *testing.T) {
	b, err := MarshalDocumented(Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Fields() {
		key := f.Path[strings.LastIndexByte(f.Path, '.')+1:]
		if !strings.Contains(string(b), "\n"+key+" = ") && !strings.Contains(string(b), "[["+f.Path+"]]") && !strings.Contains(string(b), "# "+f.Path+" (") {
			t.Errorf("--defaults does not show %s", f.Path)
		}
	}
	if !strings.Contains(string(b), "# optim.knobs (") {
		t.Error("the empty knob schedule is not documented")
	}
	plain, _ := Marshal(Default())
	if !strings.HasPrefix(string(b), string(plain)) {
		t.Error("the documented rendering changed the config itself")
	}
}
