package prepare

import (
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/clean"
)

// TestFingerprintFollowsFilterSettings: a changed language-ID or
// compression setting — in a source's filters overrides, or in a filter
// set's defaults (a new binary) — changes the fingerprint, which both the
// single-process and the distributed path (unitKey) key their work on, so
// the dataset is prepared again.
func TestFingerprintFollowsFilterSettings(t *testing.T) {
	base := func() Config {
		c := DefaultConfig()
		c.Sources = []Source{{Name: "web", Inputs: []string{"../clean/testdata/langid/labelled.jsonl"}, Format: "jsonl", Filter: "web"}}
		return c
	}
	fp := func(c Config) string {
		t.Helper()
		rc, err := resolved(c)
		if err != nil {
			t.Fatal(err)
		}
		s, err := fingerprint(c, rc, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ref := fp(base())
	if again := fp(base()); again != ref {
		t.Fatal("fingerprint of the same config differs")
	}
	cases := []struct {
		name string
		mod  func(c *Config)
		def  func(c *clean.Config)
	}{
		{"langid.keep", func(c *Config) {
			c.Sources[0].Filters = map[string]any{"langid": map[string]any{"keep": []any{"en", "de"}}}
		}, nil},
		{"langid.min_confidence", func(c *Config) {
			c.Sources[0].Filters = map[string]any{"langid": map[string]any{"min_confidence": 0.9}}
		}, nil},
		{"compression.min_ratio", func(c *Config) {
			c.Sources[0].Filters = map[string]any{"compression": map[string]any{"min_ratio": 0.3}}
		}, nil},
		{"default langid.min_chars", nil, func(c *clean.Config) { c.LangID.MinChars = 100 }},
		{"default compression.enabled", nil, func(c *clean.Config) { c.Compression.Enabled = false }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			if tc.mod != nil {
				tc.mod(&c)
			}
			if tc.def != nil {
				saved := defaultFilters
				defer func() { defaultFilters = saved }()
				defaultFilters = func(kind string) clean.Config {
					d := saved(kind)
					tc.def(&d)
					return d
				}
			}
			if fp(c) == ref {
				t.Errorf("%s changed, the fingerprint did not", tc.name)
			}
			u := unit{Idx: 0}
			if unitKey(fp(c), 1<<20, u) == unitKey(ref, 1<<20, u) {
				t.Errorf("%s changed, a distributed unit's key did not", tc.name)
			}
		})
	}
}
