package prepare

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestGenerateDistBenchCorpus writes the corpus and data config of the
// distributed-prepare throughput measurement (docs/prepare-distributed.md)
// into $KESTREL_DIST_BENCH_DIR: about $KESTREL_DIST_BENCH_MB (default 320)
// MB of JSONL in 64 MB files from the shipped text with 5% planted exact
// and 5% near duplicates (GenerateBenchCorpus), and bench.toml. Skipped
// unless the directory is set.
func TestGenerateDistBenchCorpus(t *testing.T) {
	dir := os.Getenv("KESTREL_DIST_BENCH_DIR")
	if dir == "" {
		t.Skip("set KESTREL_DIST_BENCH_DIR to generate the distributed-prepare benchmark corpus")
	}
	mb := 320
	if s := os.Getenv("KESTREL_DIST_BENCH_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil || mb <= 0 {
			t.Fatalf("KESTREL_DIST_BENCH_MB=%q: want a positive integer", s)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, exact, near, err := GenerateBenchCorpus(dir, mb, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || exact == 0 || near == 0 {
		t.Fatalf("%d files, %d exact and %d near duplicates planted", len(files), exact, near)
	}
	conf := fmt.Sprintf(`# distributed-prepare benchmark corpus: %d MB, %d exact and %d near duplicates planted
[prepare]
workers = 1

[prepare.tokenizer]
mode = "none"

[[prepare.sources]]
name = "web"
inputs = [%q]
format = "jsonl"
filter = "web"
`, mb, exact, near, filepath.Join(dir, "bench-*.jsonl"))
	if err := os.WriteFile(filepath.Join(dir, "bench.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files, %d exact and %d near duplicates planted; config %s", len(files), exact, near, filepath.Join(dir, "bench.toml"))
}
