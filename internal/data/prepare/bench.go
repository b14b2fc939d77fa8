package prepare

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/clean"
	"github.com/kestrel-lm/kestrel/internal/data/corpus"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/dedup"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// BenchResult is one line of `kestrel bench prepare --json`.
type BenchResult struct {
	Op        string  `json:"op"`
	Stage     string  `json:"stage"`
	MB        float64 `json:"mb"`
	Seconds   float64 `json:"seconds"`
	MBPerS    float64 `json:"mb_per_s"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	Workers   int     `json:"workers"`
	Note      string  `json:"note,omitempty"`
}

// GenerateBenchCorpus writes about mb megabytes of JSONL documents into dir,
// built from the shipped text (WikiText-2, Tiny Shakespeare, GSM8K train,
// Dolma CC), with planted exact duplicates (dupFrac of documents are copies
// of earlier ones) and near-duplicates (nearFrac, each with 1–10% of its
// words replaced). It returns the files and the counts planted.
func GenerateBenchCorpus(dir string, mb int, seed uint64) (files []string, exact, near int, err error) {
	pool, err := benchParagraphs()
	if err != nil {
		return nil, 0, 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	const dupFrac, nearFrac = 0.05, 0.05
	target := int64(mb) << 20
	var written int64
	var recent []string // a window of earlier documents to copy from
	for fi := 0; written < target; fi++ {
		p := filepath.Join(dir, fmt.Sprintf("bench-%03d.jsonl", fi))
		f, err := os.Create(p)
		if err != nil {
			return nil, 0, 0, err
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		var fileBytes int64
		for fileBytes < 64<<20 && written < target {
			var text string
			r := rng.Float64()
			switch {
			case r < dupFrac && len(recent) > 0:
				text = recent[rng.IntN(len(recent))]
				exact++
			case r < dupFrac+nearFrac && len(recent) > 0:
				text = benchEdit(recent[rng.IntN(len(recent))], 0.01+0.09*rng.Float64(), rng)
				near++
			default:
				k := 2 + rng.IntN(5)
				parts := make([]string, k)
				for i := range parts {
					parts[i] = pool[rng.IntN(len(pool))]
				}
				text = strings.Join(parts, "\n\n")
				if len(recent) < 4096 {
					recent = append(recent, text)
				} else {
					recent[rng.IntN(len(recent))] = text
				}
			}
			b, _ := json.Marshal(map[string]string{"text": text})
			b = append(b, '\n')
			if _, err := bw.Write(b); err != nil {
				f.Close()
				return nil, 0, 0, err
			}
			fileBytes += int64(len(b))
			written += int64(len(b))
		}
		if err := bw.Flush(); err != nil {
			f.Close()
			return nil, 0, 0, err
		}
		if err := f.Close(); err != nil {
			return nil, 0, 0, err
		}
		files = append(files, p)
	}
	return files, exact, near, nil
}

// benchEdit replaces about frac of the words of s, keeping its lines.
func benchEdit(s string, frac float64, rng *rand.Rand) string {
	lines := strings.Split(s, "\n")
	for li, line := range lines {
		w := strings.Split(line, " ")
		for i := range w {
			if w[i] != "" && rng.Float64() < frac {
				w[i] = "edit" + strconv.Itoa(rng.IntN(100000))
			}
		}
		lines[li] = strings.Join(w, " ")
	}
	return strings.Join(lines, "\n")
}

// benchParagraphs collects paragraphs of shipped text.
func benchParagraphs() ([]string, error) {
	var pool []string
	for _, rel := range []string{"wikitext-2/valid.txt", "wikitext-2/test.txt", "tinyshakespeare/input.txt"} {
		p, err := datadir.Path(rel)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, para := range strings.Split(string(b), "\n\n") {
			if para = strings.TrimSpace(para); len(para) > 200 {
				pool = append(pool, para)
			}
		}
	}
	for _, rel := range []string{"gsm8k/train.jsonl"} {
		p, err := datadir.Path(rel)
		if err != nil {
			return nil, err
		}
		in := []corpus.Input{{Path: p}}
		for d, err := range corpus.Read(context.Background(), in, corpus.Options{Source: "x", Format: "jsonl", TextField: "question,answer"}) {
			if err != nil {
				return nil, err
			}
			pool = append(pool, d.Text)
		}
	}
	return pool, nil
}

// resetPeakRSS resets VmHWM (Linux: "5" to /proc/self/clear_refs); it
// returns false where that is not possible, and peaks are then cumulative.
func resetPeakRSS() bool {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// PeakRSSMB returns VmHWM from /proc/self/status in MB (0 if unknown).
func PeakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// Bench times each stage over the files: every stage streams the corpus
// from disk through a pool of workers goroutines (so each line includes
// reading and JSON parsing; the "read" line is that cost alone, the
// reference the others compare to), then a full Run of the pipeline.
func Bench(ctx context.Context, files []string, workers int, out string, emit func(BenchResult)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	inputs := make([]corpus.Input, len(files))
	for i, f := range files {
		inputs[i] = corpus.Input{Path: f, Root: filepath.Dir(f)}
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		total += st.Size()
	}
	mb := float64(total) / 1e6
	measure := func(stage, note string, fn func() error) error {
		exactPeak := resetPeakRSS()
		t := time.Now()
		if err := fn(); err != nil {
			return fmt.Errorf("bench %s: %w", stage, err)
		}
		s := time.Since(t).Seconds()
		if !exactPeak {
			note = strings.TrimSpace(note + " (peak RSS cumulative)")
		}
		r := BenchResult{Op: "prepare", Stage: stage, MB: mb, Seconds: s, MBPerS: mb / s, PeakRSSMB: PeakRSSMB(), Workers: workers, Note: note}
		if stage == "decontam_build" {
			r.MB, r.MBPerS = 0, 0 // a fixed cost, not a rate over the corpus
		}
		emit(r)
		return nil
	}
	stream := func(fn func(text string, id string)) error {
		ch := make(chan document.Doc, 4*workers)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for d := range ch {
					fn(d.Text, d.ID)
				}
			}()
		}
		var rerr error
		for d, err := range corpus.Read(ctx, inputs, corpus.Options{Source: "bench", Format: "jsonl"}) {
			if err != nil {
				rerr = err
				break
			}
			ch <- d
		}
		close(ch)
		wg.Wait()
		return rerr
	}
	if err := measure("read", "JSONL read + parse, the reference", func() error { return stream(func(string, string) {}) }); err != nil {
		return err
	}
	f, err := clean.New(clean.DefaultConfig("web"))
	if err != nil {
		return err
	}
	var kept atomic.Int64
	if err := measure("clean", "read + web quality filters", func() error {
		return stream(func(text, _ string) {
			if f.Check(text).Keep {
				kept.Add(1)
			}
		})
	}); err != nil {
		return err
	}
	ex := dedup.NewExact()
	if err := measure("exact_dedup", "read + normalise + xxh3 + map", func() error {
		return stream(func(text, id string) { ex.Add(id, text) })
	}); err != nil {
		return err
	}
	_, dups := ex.Counts()
	near, err := dedup.NewNear(dedup.DefaultConfig())
	if err != nil {
		return err
	}
	var nres *dedup.Result
	if err := measure("near_dedup", "read + MinHash 14x8 signatures + LSH clusters", func() error {
		if err := stream(func(text, id string) { near.Add(id, text) }); err != nil {
			return err
		}
		nres, err = near.Finish()
		return err
	}); err != nil {
		return err
	}
	var idx *decontam.Index
	if err := measure("decontam_build", "n-gram index of gsm8k test, hellaswag, piqa (fixed cost)", func() error {
		var err error
		dc := decontam.DefaultConfig()
		if err := datadir.ResolveAt(&dc, "prepare.decontam.index"); err != nil {
			return err
		}
		idx, err = decontam.Build(dc)
		return err
	}); err != nil {
		return err
	}
	var hits atomic.Int64
	if err := measure("decontam", "read + 13-gram lookups", func() error {
		return stream(func(text, id string) {
			if idx.Check(id, text).Hit {
				hits.Add(1)
			}
		})
	}); err != nil {
		return err
	}
	cfg := DefaultConfig()
	cfg.Workers = workers
	cfg.Sources = []Source{{Name: "bench", Inputs: files, Format: "jsonl", Filter: "web"}}
	var rep *datareport.Report
	if err := measure("total", "kestrel prepare end to end (no tokenizer)", func() error {
		var err error
		rep, err = Run(ctx, cfg, RunOptions{Out: out, Force: true})
		return err
	}); err != nil {
		return err
	}
	emit(BenchResult{Op: "prepare", Stage: "summary", MB: mb, Workers: workers,
		Note: fmt.Sprintf("clean kept %d; exact dups %d; near clusters %d, near dropped %d (rate %.4f), %d B/doc signature index; decontam hits %d; full run kept %d docs, near_dup_rate %.4f",
			kept.Load(), dups, len(nres.Clusters), len(nres.Dropped), nres.NearDupRate(), near.BytesPerDoc(), hits.Load(), rep.Kept.Docs, rep.NearDupRate)})
	return nil
}

// BenchRun says how `kestrel bench prepare` runs: a generated corpus of MB
// megabytes (in Dir, kept, or in a temporary directory, removed), the
// stages on Workers goroutines (0 = GOMAXPROCS).
type BenchRun struct {
	MB, Workers int
	Dir         string
}

// RunBench generates the benchmark corpus, runs Bench over it and hands
// every result to emit: first the corpus (stage "generate", its files and
// planted duplicates in Note), then each stage's, then the summary.
func RunBench(ctx context.Context, o BenchRun, emit func(BenchResult)) error {
	if o.MB < 1 {
		return fmt.Errorf("bench prepare: --mb must be >= 1")
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "kestrel-bench-prepare-")
		if err != nil {
			return fmt.Errorf("bench prepare: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench prepare: %w", err)
	}
	files, exact, near, err := GenerateBenchCorpus(dir, o.MB, 1)
	if err != nil {
		return fmt.Errorf("bench prepare: generate corpus: %w", err)
	}
	emit(BenchResult{Op: "prepare", Stage: "generate", MB: float64(o.MB), Note: fmt.Sprintf("%d files, planted %d exact and %d near duplicates", len(files), exact, near)})
	return Bench(ctx, files, o.Workers, filepath.Join(dir, "out"), emit)
}
