package replay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// decoder returns the run's codec as a function from token ids to text:
// bytes for byte-level data, else the tokenizer the dataset was built with
// (the manifest's tokenizer.json, the file the run's manifest hashes).
func decoder(path string) (func([]int32) string, error) {
	if path == "" || path == "bytes" {
		return generate.BytesCodec().Decode, nil
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("replay: --decode: %w", err)
	}
	return tok.DecodeString, nil
}

// decodeRows sets the text of each row of a replayed step: the row's input
// tokens followed by its last target (the text the row covers), trailing
// padding left out. Rows the loader did not describe (byte-level data) are
// added with their source.
func decodeRows(st *Step, inputs, targets []int32, sources []string, dec func([]int32) string, T int) {
	for r := 0; r*T < len(inputs); r++ {
		in, tg := inputs[r*T:(r+1)*T], targets[r*T:(r+1)*T]
		n := T
		for n > 0 && tg[n-1] < 0 {
			n--
		}
		ids := slices.Clone(in[:n])
		if n > 0 {
			ids = append(ids, tg[n-1])
		}
		text := dec(ids)
		if r >= len(st.Rows) {
			src := ""
			if r < len(sources) {
				src = sources[r]
			}
			st.Rows = append(st.Rows, Row{Row: r, Source: src})
		}
		st.Rows[r].Text = &text
	}
}

// overrideWarnings names the replayed steps that were trained before an
// effective intervention's config overrides (kestrel rewind --set) took
// effect: the replay rebuilds every step with the config in force after
// them (config.toml holds it once the run resumed, and the values before
// are not recorded), so a key that changes the forward or backward pass
// (train.*, debug.*, optim.knobs) may make those steps differ from the log.
func overrideWarnings(ivs []runlog.Intervention, from, to int) []string {
	var out []string
	for _, iv := range ivs {
		if len(iv.Set) == 0 || from > iv.ToStep {
			continue
		}
		keys := make([]string, 0, len(iv.Set))
		for k, v := range iv.Set {
			keys = append(keys, k+"="+v)
		}
		slices.Sort(keys)
		out = append(out, fmt.Sprintf("steps %d:%d were trained before intervention %s set %s; they are replayed with the config in force after it",
			from, min(to, iv.ToStep), iv.ID, strings.Join(keys, ", ")))
	}
	return out
}
