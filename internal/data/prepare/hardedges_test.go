package prepare

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
)

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// smallConfig reads every *.jsonl* file of dir as one source, without
// filters, decontamination or tokenizer (fast).
func smallConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.Workers = 2
	cfg.Decontam.Enabled = false
	cfg.Sources = []Source{{Name: "web", Inputs: []string{filepath.Join(dir, "*.jsonl*")}, Format: "jsonl", Filter: "none"}}
	return cfg
}

// A compressed input that cannot be decoded (0 bytes, not gzip, not zstd,
// truncated) is skipped, counted by kind and as a skipped file, and logged
// with its name and reason; the run completes with the other files. With
// --strict the run aborts naming the file.
func TestPrepareBadCompressedInputs(t *testing.T) {
	var good []byte
	for i := range 5 {
		good = fmt.Appendf(good, `{"text":"good document number %d with enough words to pass"}`+"\n", i)
	}
	full := gzipped(good)
	cases := []struct {
		name, file string
		data       []byte
		kind       string
	}{
		{"0-byte gz", "bad.jsonl.gz", nil, "empty_file"},
		{"non-gzip gz", "bad.jsonl.gz", good, "bad_compression"},
		{"bad zst", "bad.jsonl.zst", good, "bad_compression"},
		{"truncated gz", "bad.jsonl.gz", full[:len(full)-20], "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bad := filepath.Join(dir, tc.file)
			os.WriteFile(bad, tc.data, 0o644)
			os.WriteFile(filepath.Join(dir, "good.jsonl"), good, 0o644)
			cfg := smallConfig(dir)
			var log bytes.Buffer
			out := filepath.Join(t.TempDir(), "ds")
			rep, err := Run(context.Background(), cfg, RunOptions{Out: out, Log: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatalf("run aborted: %v", err)
			}
			if rep.Problems.Counts[tc.kind] != 1 || rep.Problems.FilesSkipped != 1 || rep.Sources[0].Problems[tc.kind] != 1 {
				t.Errorf("problems %+v, want one %s and one file skipped", rep.Problems, tc.kind)
			}
			if rep.Kept.Docs < 5 {
				t.Errorf("kept %d documents, want the good file's 5", rep.Kept.Docs)
			}
			if l := log.String(); !strings.Contains(l, bad) || !strings.Contains(l, tc.kind) || !strings.Contains(l, "reason=") {
				t.Errorf("log does not name the file and reason:\n%s", l)
			}
			_, err = Run(context.Background(), cfg, RunOptions{Out: filepath.Join(t.TempDir(), "ds"), Strict: true, Log: slog.New(slog.NewTextHandler(&log, nil))})
			if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), tc.kind) {
				t.Fatalf("strict: err %v, want one naming %s and %s", err, bad, tc.kind)
			}
		})
	}
}

// TestHelperKilledRun is not a test: run as a child process by
// TestPrepareRemovesKilledRunTemps, it starts writing a dataset the way Run
// does and dies without cleaning up, as a killed prepare would.
func TestHelperKilledRun(t *testing.T) {
	parent := os.Getenv("KESTREL_TEST_KILLED_PARENT")
	if parent == "" {
		t.Skip("helper process only")
	}
	d, err := atomicfile.NewDir(parent, "ds")
	if err != nil {
		os.Exit(3)
	}
	os.MkdirAll(filepath.Join(d.Path(), "docs"), 0o755)
	os.WriteFile(filepath.Join(d.Path(), "docs", "web-00000.jsonl.zst"), []byte("half written"), 0o644)
	os.Exit(2) // no deferred cleanup runs
}

// The temporary directory a killed prepare left beside --out is removed by
// the next run (and logged); unrelated hidden directories are kept.
func TestPrepareRemovesKilledRunTemps(t *testing.T) {
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperKilledRun$")
	cmd.Env = append(os.Environ(), "KESTREL_TEST_KILLED_PARENT="+parent)
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("helper: %v", err)
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), ".ds.tmp-") {
		t.Fatalf("the killed run left %v, want one .ds.tmp-* directory", ents)
	}
	leftover := filepath.Join(parent, ents[0].Name())
	keep := []string{".ds.keep", ".other.tmp-1", ".ds.tmp-notdigits", ".git"}
	for _, k := range keep {
		os.MkdirAll(filepath.Join(parent, k), 0o755)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good.jsonl"), []byte(`{"text":"a good document with enough words"}`+"\n"), 0o644)
	var log bytes.Buffer
	if _, err := Run(context.Background(), smallConfig(dir), RunOptions{Out: filepath.Join(parent, "ds"), Log: slog.New(slog.NewTextHandler(&log, nil))}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("%s still there after the next run", leftover)
	}
	if !strings.Contains(log.String(), leftover) {
		t.Errorf("the removal is not logged:\n%s", log.String())
	}
	for _, k := range keep {
		if _, err := os.Stat(filepath.Join(parent, k)); err != nil {
			t.Errorf("unrelated %s removed: %v", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(parent, "ds", "report.json")); err != nil {
		t.Errorf("no dataset: %v", err)
	}
}
