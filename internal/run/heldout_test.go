package run

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/eval"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// heldoutText writes n bytes of a shipped text to dir/name.
func heldoutText(t *testing.T, dir, name, rel string, n int) string {
	t.Helper()
	src, err := datadir.Path(rel)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b[:n], 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHeldoutInLoopAndEval: two user held-out sets are scored at every
// evaluation of a run (bpb/heldout/<name> in metrics.jsonl) with their
// sha256 in the manifest, and kestrel eval --tasks heldout gives the same
// numbers on the final checkpoint; a --heldout set adds a domain, and one
// that is a training input is flagged.
func TestHeldoutInLoopAndEval(t *testing.T) {
	root := t.TempDir()
	legal := heldoutText(t, root, "legal.txt", "wikitext-2/test.txt", 6000)
	code := heldoutText(t, root, "code.txt", "gsm8k/test.jsonl", 3000)
	cfg := tinyRun(8)
	cfg.Train.EvalEvery = 4
	cfg.Eval.Heldout = []train.HeldoutSet{{Name: "legal", Path: legal}, {Name: "code", Path: code}}
	cfg.Eval.HeldoutBytes = 2000
	dir := filepath.Join(root, "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	evals := evalLinesOf(t, dir)
	if len(evals) != 2 {
		t.Fatalf("%d evaluations, want 2", len(evals))
	}
	for _, e := range evals {
		for _, n := range []string{"bpb/heldout/legal", "bpb/heldout/code"} {
			if v, ok := e[n]; !ok || !(v > 0 && v < 16) {
				t.Errorf("step %v: %s = %v (present %v)", e["step"], n, v, ok)
			}
		}
	}
	m, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.EvalHashes["heldout/legal"] != fileHash(t, legal) || m.EvalHashes["heldout/code"] != fileHash(t, code) {
		t.Errorf("manifest eval_hashes %v", m.EvalHashes)
	}

	input, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := eval.Run(eval.Options{Run: dir, Tasks: []string{eval.HeldoutTask}, HeldoutBytes: -1,
		Heldout: []train.HeldoutSet{{Name: "shakespeare", Path: input}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]eval.BPBResult{}
	for _, b := range res.BPB {
		got[b.Name] = b
	}
	for _, n := range []string{"legal", "code"} {
		b, loop := got["heldout/"+n], evals[1]["bpb/heldout/"+n]
		if b.Bytes > 2000 || b.Bytes < 1900 || math.Abs(b.BPB-loop) > 1e-4*loop {
			t.Errorf("kestrel eval heldout/%s: %.6f bits/byte over %d bytes; the loop's final evaluation %.6f", n, b.BPB, b.Bytes, loop)
		}
		if res.EvalHashes["heldout/"+n] != m.EvalHashes["heldout/"+n] {
			t.Errorf("kestrel eval hashes heldout/%s as %q, the manifest %q", n, res.EvalHashes["heldout/"+n], m.EvalHashes["heldout/"+n])
		}
	}
	if b, ok := got["heldout/shakespeare"]; !ok || !(b.BPB > 0) {
		t.Errorf("--heldout set not scored: %+v", res.BPB)
	}
	flagged := false
	for _, c := range res.Coverage {
		flagged = flagged || c.Task == "heldout/shakespeare" && c.Status == eval.TrainedOn
		if c.Task != "heldout/shakespeare" && !c.OK() {
			t.Errorf("coverage %+v", c)
		}
	}
	if !flagged {
		t.Errorf("a held-out set that is the training text is not flagged: %+v", res.Coverage)
	}
}

// TestHeldoutBadFilesFailBeforeTraining: a held-out set that cannot be
// scored stops kestrel train before it writes anything, naming the set
// and the file.
func TestHeldoutBadFilesFailBeforeTraining(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path string
		want string
	}{
		{filepath.Join(root, "missing.txt"), "missing.txt: no such file"},
		{root, root + " is a directory"},
		{write("empty.txt", ""), "empty.txt: no text to score"},
		{write("latin1.txt", "caf\xe9\n"), "latin1.txt: not UTF-8 text: invalid byte at offset 3 (line 1)"},
		{"${KESTREL_DATA}/no-such-dir/x.txt", "no-such-dir/x.txt: no such file"},
	} {
		cfg := tinyRun(4)
		cfg.Eval.Heldout = []train.HeldoutSet{{Name: "ok", Path: write("ok.txt", "fine text\n")}, {Name: "bad", Path: tc.path}}
		dir := filepath.Join(root, "run")
		_, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()})
		if err == nil || !strings.Contains(err.Error(), "eval.heldout[1] (bad)") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming eval.heldout[1] (bad) and %q", tc.path, err, tc.want)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the run directory was created (%v)", tc.path, err)
		}
	}
}

// TestHeldoutConfig: the [eval] heldout tables decode strictly (an unknown
// key names its line) and config --defaults documents them.
func TestHeldoutConfig(t *testing.T) {
	cfg := config.Default()
	src := "[eval]\nheldout = [{ name = \"legal\", path = \"${KESTREL_DATA}/legal.txt\" }, { name = \"code\", path = \"/c.txt\" }]\nheldout_bytes = 4096\n"
	if err := config.Decode([]byte(src), "run.toml", &cfg); err != nil {
		t.Fatal(err)
	}
	if want := []train.HeldoutSet{{Name: "legal", Path: "${KESTREL_DATA}/legal.txt"}, {Name: "code", Path: "/c.txt"}}; !slices.Equal(cfg.Eval.Heldout, want) || cfg.Eval.HeldoutBytes != 4096 {
		t.Errorf("decoded %+v", cfg.Eval)
	}
	bad := "[eval]\nheldout = [{ name = \"legal\", file = \"/l.txt\" }]\n"
	if err := config.Decode([]byte(bad), "run.toml", &cfg); err == nil || !strings.Contains(err.Error(), "run.toml") || !strings.Contains(err.Error(), "file") {
		t.Errorf("unknown key in a held-out table: %v", err)
	}
	doc, err := config.MarshalDocumented(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "heldout_bytes = 32768") || !strings.Contains(string(doc), "bpb/heldout/<name>") {
		t.Errorf("config --defaults lacks the held-out keys:\n%s", doc)
	}
}
