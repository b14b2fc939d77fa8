package samples

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"off ignores the rest", func(c *Config) { c.Enabled, c.Tokens = false, -1 }, ""},
		{"no tokens", func(c *Config) { c.Tokens = 0 }, "samples.tokens"},
		{"too many tokens", func(c *Config) { c.Tokens = MaxTokens + 1 }, "samples.tokens"},
		{"greedy temperature", func(c *Config) { c.Temperature = 0 }, "samples.temperature"},
		{"negative top-k", func(c *Config) { c.TopK = -1 }, "samples.top_k"},
		{"too many prompts", func(c *Config) { c.Prompts = make([]string, MaxPrompts+1) }, "samples.prompts"},
		{"long prompt", func(c *Config) { c.Prompts = []string{"a", strings.Repeat("x", MaxPromptBytes+1)} }, "samples.prompts[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.edit(&cfg)
			err := cfg.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
}

func TestDefaultPrompts(t *testing.T) {
	for _, byteLevel := range []bool{true, false} {
		ps := DefaultPrompts(byteLevel)
		if len(ps) == 0 || ps[0] != "" {
			t.Errorf("byte-level %v: %q should start with the empty prompt", byteLevel, ps)
		}
		for _, p := range ps {
			if !byteLevel && strings.HasSuffix(p, " ") {
				t.Errorf("BPE prompt %q ends in a space (a lone space token)", p)
			}
		}
	}
}
