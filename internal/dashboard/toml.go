package dashboard

import (
	"fmt"

	"github.com/pelletier/go-toml/v2"
)

// flattenTOML turns a config file into section.key → value for side-by-side
// comparison of runs. Values that are tables nest with dots; every other
// value (bool, number, array, date) is shown as Go prints it.
//
// It is deliberately not runlog's flattening of metric lines: that one is a
// streaming JSON scanner that turns booleans into 1/0 and drops empty arrays
// (right for plotting, wrong for a config diff, where `qk_norm = false` and
// `rewarm_at = []` must show as written), and feeding it TOML would mean a
// decode → JSON encode → parse round trip. This is the only flattener of
// decoded values left in the module.
func flattenTOML(b []byte) map[string]any {
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		return map[string]any{"error": fmt.Sprintf("config.toml: %v", err)}
	}
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		t, ok := v.(map[string]any)
		if !ok {
			out[prefix] = fmt.Sprint(v)
			return
		}
		for k, e := range t {
			if prefix != "" {
				k = prefix + "." + k
			}
			walk(k, e)
		}
	}
	walk("", m)
	return out
}
