package dashboard

import (
	"strings"
	"testing"
)

func TestFlattenTOML(t *testing.T) {
	got := flattenTOML([]byte(`
[model]
qk_norm = false
d_model = 64
[optim]
lr = 3e-4
rewarm_at = []
[data]
path = "runs/x"
[data.extra]
deep = true
[[prepare.sources]]
name = "web"
`))
	want := map[string]string{"model.qk_norm": "false", "model.d_model": "64", "optim.lr": "0.0003", "optim.rewarm_at": "[]",
		"data.path": "runs/x", "data.extra.deep": "true", "prepare.sources": "[map[name:web]]"}
	if len(got) != len(want) {
		t.Errorf("got %d keys %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %q", k, got[k], v)
		}
	}
	if e, _ := flattenTOML([]byte("[a\nb = 1"))["error"].(string); !strings.HasPrefix(e, "config.toml: ") {
		t.Errorf("error %q", e)
	}
}
