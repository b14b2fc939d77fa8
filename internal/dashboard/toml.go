package dashboard

import (
	"fmt"
	"sort"

	"github.com/pelletier/go-toml/v2"
)

// flattenTOML turns a config file into section.key → value for side-by-side
// comparison of runs. Values that are tables nest with dots.
func flattenTOML(b []byte) map[string]any {
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		return map[string]any{"error": fmt.Sprintf("config.toml: %v", err)}
	}
	out := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x[k])
			}
		default:
			out[prefix] = fmt.Sprint(x)
		}
	}
	walk("", m)
	return out
}
