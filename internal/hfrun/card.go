package hfrun

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/openrun"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Evals is what the model card reports from metrics.jsonl: the last
// validation loss, and the latest value of every metric whose name starts
// with "bpb/" (bits per byte) or "bench/" (benchmark scores).
type Evals struct {
	Step    int
	ValLoss float64 // NaN when the run never evaluated
	Scores  map[string]float64
}

// ReadEvals scans path (a metrics.jsonl); a malformed line is an error
// naming its line number.
func ReadEvals(path string) (Evals, error) {
	ev := Evals{ValLoss: math.NaN(), Scores: map[string]float64{}}
	f, err := os.Open(path)
	if err != nil {
		return ev, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	rec := runlog.NewRecord()
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := runlog.ParseLine(sc.Bytes(), rec); err != nil {
			return ev, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if v, ok := rec.Num("val_loss"); ok {
			ev.ValLoss = v
			if s, ok := rec.Num("step"); ok {
				ev.Step = int(s)
			}
		}
		rec.Each(func(name string, v float64) {
			if strings.HasPrefix(name, "bpb/") || strings.HasPrefix(name, "bench/") {
				ev.Scores[name] = v
			}
		})
	}
	if err := sc.Err(); err != nil {
		return ev, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// Card renders the README.md model card of an export: the architecture,
// the data (sources and mixture), tokens trained, the final validation
// loss, bits per byte and benchmark scores when the run has them, and the
// hashes that identify the run's inputs. Missing run files leave their
// lines out; a malformed one is an error.
func Card(run string, l *checkpoint.Loaded, res *Result) (string, error) {
	st := l.State
	c := st.Model
	var b strings.Builder
	arch := strings.ToLower(strings.TrimSuffix(res.Arch, "ForCausalLM"))
	fmt.Fprintf(&b, "---\nlibrary_name: transformers\npipeline_tag: text-generation\ntags:\n- kestrel\n- %s\n---\n\n", arch)
	fmt.Fprintf(&b, "# %s\n\nA %s model trained from scratch with kestrel, exported from `%s` (step %d).\n\n", filepath.Base(filepath.Clean(run)), res.Arch, l.Dir, st.Step)
	if res.Refused != "" {
		fmt.Fprintf(&b, "**Warning:** exported with --force although Hugging Face cannot express it: %s. Stock Hugging Face code computes a different model.\n\n", res.Refused)
	}
	b.WriteString("## Model\n\n| | |\n|---|---|\n")
	row := func(k, format string, a ...any) { fmt.Fprintf(&b, "| %s | %s |\n", k, fmt.Sprintf(format, a...)) }
	n, _ := c.NumParams()
	row("parameters", "%d", n)
	row("layers × width", "%d × %d (MLP %d)", c.NLayers, c.DModel, c.MLPHidden)
	row("heads (query / key-value)", "%d / %d, head_dim %d", c.NHeads, c.NKVHeads, c.DModel/max(c.NHeads, 1))
	row("vocabulary / context", "%d / %d", c.Vocab, c.SeqLen)
	row("QK-Norm, tied embeddings", "%t, %t", c.QKNorm, c.Tied)
	row("weights", "%s", map[bool]string{true: "EMA of the weights", false: "raw weights"}[res.EMA])
	b.WriteString("\n## Training\n\n| | |\n|---|---|\n")
	row("tokens trained", "%d", st.TokensSeen)
	row("steps", "%d", st.Step)
	if r, err := openrun.Open(run); err == nil {
		d := r.Config.Data
		switch {
		case d.Kind == "bytes":
			row("data", "bytes of `%s` (byte-level, vocabulary 256)", d.Train)
		case len(d.Sources) > 0:
			var parts []string
			total := 0.0
			for _, s := range d.Sources {
				total += s.Weight
			}
			for _, s := range d.Sources {
				parts = append(parts, fmt.Sprintf("%s %.1f%%", s.Name, 100*s.Weight/total))
			}
			row("data", "`%s`; mixture: %s", d.Path, strings.Join(parts, ", "))
		default:
			row("data", "`%s`; every source weighted by its train tokens", d.Path)
		}
		if len(d.Stages) > 0 {
			row("mixture stages", "%d later mixture(s) (see the run's config.toml)", len(d.Stages))
		}
	} else if !os.IsNotExist(err) {
		return "", err
	}
	if res.ByteLevel {
		row("tokenizer", "byte-level: id = byte value, no special tokens")
	} else if res.Tokens.EOS != nil {
		row("end of text", "`%s` (id %d)", strings.ReplaceAll(res.Tokens.EOS.Content, "|", "\\|"), res.Tokens.EOS.ID)
	}
	ev, err := ReadEvals(rundir.Of(run).Metrics())
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	if !math.IsNaN(ev.ValLoss) {
		row("final validation loss", "%.4f nats/token (step %d)", ev.ValLoss, ev.Step)
	}
	if len(ev.Scores) > 0 {
		b.WriteString("\n## Evaluation\n\n| metric | value |\n|---|---|\n")
		names := make([]string, 0, len(ev.Scores))
		for k := range ev.Scores {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			row(k, "%.4f", ev.Scores[k])
		}
	}
	b.WriteString("\n## Provenance\n\n| | |\n|---|---|\n")
	if data, err := os.ReadFile(rundir.Of(run).Manifest()); err == nil {
		sum := sha256.Sum256(data)
		row("run manifest.json sha256", "`%s`", hex.EncodeToString(sum[:]))
		if man, err := runlog.ReadManifest(run); err == nil {
			row("dataset manifest hash", "`%s`", man.DatasetHash)
			if man.TokenizerHash != "" {
				row("tokenizer hash", "`%s`", man.TokenizerHash)
			}
			row("config hash", "`%s`", man.ConfigHash)
			if man.GitSHA != "" {
				row("kestrel commit", "`%s`", man.GitSHA)
			}
		} else {
			return "", err
		}
	}
	row("checkpoint config hash", "`%s`", st.ConfigHash)
	b.WriteString("\nLoad with `AutoModelForCausalLM.from_pretrained(DIR)` and `AutoTokenizer.from_pretrained(DIR)`; no custom code is needed.\n")
	return b.String(), nil
}
