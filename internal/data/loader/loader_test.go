package loader

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
)

// tokBase spaces the sources' token values so every token names its source
// and its offset in that source's stream: token = src·tokBase + offset.
const tokBase = 10_000_000

// synthStream lays out documents of random length 1..maxDoc until at least
// n tokens; token values encode (source, offset).
func synthStream(src int, n int64, maxDoc int, seed uint64) *MemStream {
	r := rand.New(rand.NewPCG(seed, uint64(src)))
	m := &MemStream{}
	for int64(len(m.Tokens)) < n {
		m.Starts = append(m.Starts, int64(len(m.Tokens)))
		m.IDs = append(m.IDs, fmt.Sprintf("s%d-d%d", src, len(m.Starts)-1))
		k := 1 + r.IntN(maxDoc)
		for i := 0; i < k; i++ {
			m.Tokens = append(m.Tokens, int32(src*tokBase+len(m.Tokens)))
		}
	}
	return m
}

func synthDataset(sizes ...int64) *Dataset {
	ds := &Dataset{Name: "synth"}
	for i, n := range sizes {
		ds.Sources = append(ds.Sources, Source{
			Name:  fmt.Sprintf("src%d", i),
			Train: synthStream(i, n, 40, 7),
			Val:   synthStream(i, n/10+50, 40, 8),
		})
	}
	return ds
}

func testConfig() Config {
	c := DefaultConfig()
	c.Kind = "dataset"
	c.MixBlock = 64
	return c
}

func mustNew(t *testing.T, ds *Dataset, cfg Config, opts Options) *Loader {
	t.Helper()
	if opts.SeqLen == 0 {
		opts.SeqLen = 16
	}
	if opts.Schedule == nil {
		opts.Schedule = ConstantBatch(8)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	}
	l, err := New(ds, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

type batchOut struct {
	in, tg, seg []int32
	src         []int
}

// fillStep reads a step's batch in micro-batches of mb rows.
func fillStep(t *testing.T, l *Loader, step, mb int) batchOut {
	t.Helper()
	b := l.sched.At(step)
	T := l.SeqLen()
	o := batchOut{make([]int32, b*T), make([]int32, b*T), make([]int32, b*T), make([]int, b)}
	for r := 0; r < b; r += mb {
		n := min(mb, b-r)
		if err := l.Fill(step, b, r, n, o.in[r*T:], o.tg[r*T:], o.seg[r*T:], o.src[r:]); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func equalBatch(a, b batchOut) bool {
	return slices.Equal(a.in, b.in) && slices.Equal(a.tg, b.tg) && slices.Equal(a.seg, b.seg) && slices.Equal(a.src, b.src)
}

// TestFillPureAndResume: batches are the same with or without prefetch,
// whatever the micro-batching, in any order, and after a simulated resume
// (a fresh loader starting mid-run), across a batch-size change.
func TestFillPureAndResume(t *testing.T) {
	ds := synthDataset(20000, 9000, 3000)
	sched := batchsched.Schedule{{Start: 0, Batch: 8}, {Start: 20, Batch: 12}, {Start: 35, Batch: 4}}
	for _, perm := range []string{PermFeistel, PermLCG} {
		for _, pack := range []string{PackConcat, PackBOS} {
			cfg := testConfig()
			cfg.Permutation, cfg.Packing = perm, pack
			cfg.Stages = []Stage{{StartStep: 27, Weights: map[string]float64{"src0": 1, "src2": 3}}}
			ref := mustNew(t, ds, func() Config { c := cfg; c.Prefetch = 0; return c }(), Options{Schedule: sched, Seed: 5})
			want := make([]batchOut, 50)
			for s := range want {
				want[s] = fillStep(t, ref, s, 1000)
			}
			// prefetching loader, micro-batches of 3
			pf := mustNew(t, ds, cfg, Options{Schedule: sched, Seed: 5})
			for s := range want {
				if got := fillStep(t, pf, s, 3); !equalBatch(got, want[s]) {
					t.Fatalf("%s/%s: step %d differs with prefetch and micro-batches", perm, pack, s)
				}
			}
			// resume at step 31 in a fresh loader, then random access backwards
			res := mustNew(t, ds, cfg, Options{Schedule: sched, Seed: 5})
			for s := 31; s < 50; s++ {
				if got := fillStep(t, res, s, 5); !equalBatch(got, want[s]) {
					t.Fatalf("%s/%s: step %d differs after resume", perm, pack, s)
				}
			}
			for _, s := range []int{3, 0, 22, 21} {
				if got := fillStep(t, res, s, 2); !equalBatch(got, want[s]) {
					t.Fatalf("%s/%s: step %d differs on random access", perm, pack, s)
				}
			}
			// another seed gives other batches
			other := mustNew(t, ds, cfg, Options{Schedule: sched, Seed: 6})
			if equalBatch(fillStep(t, other, 10, 8), want[10]) {
				t.Fatalf("%s/%s: seed does not change the batch", perm, pack)
			}
		}
	}
}

// TestReportBase: Fill always takes the 0-based step index; ReportBase only
// renumbers data.stages (and messages), so a loader with ReportBase 1 and a
// stage at 12 gives, at every index, the batch of a ReportBase-0 loader with
// the stage at 11, and the stage is in force from index 11 (reported step 12).
func TestReportBase(t *testing.T) {
	ds := synthDataset(20000, 9000)
	sched := batchsched.Schedule{{Start: 0, Batch: 4}, {Start: 9, Batch: 6}}
	cfg := testConfig()
	cfg.Stages = []Stage{{StartStep: 12, Weights: map[string]float64{"src1": 1}}}
	one := mustNew(t, ds, cfg, Options{Schedule: sched, ReportBase: 1})
	cfg0 := cfg
	cfg0.Stages = []Stage{{StartStep: 11, Weights: map[string]float64{"src1": 1}}}
	zero := mustNew(t, ds, cfg0, Options{Schedule: sched})
	sawSrc0 := false
	for i := 0; i < 20; i++ {
		a, b := fillStep(t, one, i, 3), fillStep(t, zero, i, 3)
		if !equalBatch(a, b) {
			t.Fatalf("step index %d differs between ReportBase 1 and 0", i)
		}
		if len(a.src) != sched.At(i) {
			t.Fatalf("step index %d: batch %d, want %d", i, len(a.src), sched.At(i))
		}
		has0 := slices.Contains(a.src, 0)
		if i >= 11 && has0 {
			t.Fatalf("step index %d (reported %d): src0 after the stage switch at reported step 12", i, i+1)
		}
		sawSrc0 = sawSrc0 || (i == 10 && has0)
	}
	if !sawSrc0 {
		t.Fatal("index 10 (reported step 11, before the stage) has no src0 row")
	}
	info, err := one.BatchInfo(11)
	if err != nil {
		t.Fatal(err)
	}
	if info.Step != 11 || info.Number != 12 || !strings.HasPrefix(info.String(), "step 12:") {
		t.Fatalf("BatchInfo(11): Step %d Number %d, text %q", info.Step, info.Number, strings.SplitN(info.String(), "\n", 2)[0])
	}
	if err := one.Fill(-1, 4, 0, 4, make([]int32, 64), make([]int32, 64), nil, nil); err == nil {
		t.Fatal("negative step index: want error")
	}
	err = one.Fill(9, 4, 0, 4, make([]int32, 64), make([]int32, 64), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "step 10:") {
		t.Fatalf("wrong batch at index 9: want an error naming reported step 10, got %v", err)
	}
	cfg.Stages[0].StartStep = 1
	if _, err := New(ds, cfg, Options{SeqLen: 16, Schedule: sched, ReportBase: 1}); err == nil || !strings.Contains(err.Error(), "data.stages[0]") {
		t.Fatalf("stage at the first step: want error, got %v", err)
	}
}

// TestConcatPacking: every row is a contiguous window of its source's
// stream (targets shifted by one), and segment ids count document starts.
func TestConcatPacking(t *testing.T) {
	ds := synthDataset(5000, 5000)
	l := mustNew(t, ds, testConfig(), Options{SeqLen: 32})
	T := 32
	for step := 0; step < 20; step++ {
		o := fillStep(t, l, step, 8)
		info, err := l.BatchInfo(step)
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < 8; r++ {
			s := o.src[r]
			st := ds.Sources[s].Train.(*MemStream)
			ri := info.Rows[r]
			if ri.SourceIndex != s {
				t.Fatalf("step %d row %d: BatchInfo source %d, Fill source %d", step, r, ri.SourceIndex, s)
			}
			off := int64(o.in[r*T]) - int64(s*tokBase)
			if off != ri.Offset || off%int64(T) != 0 {
				t.Fatalf("step %d row %d: offset %d, BatchInfo says %d", step, r, off, ri.Offset)
			}
			seg := int32(0)
			docs := 0
			for i := 0; i < T; i++ {
				if o.in[r*T+i] != int32(s*tokBase)+int32(off)+int32(i) || o.tg[r*T+i] != o.in[r*T+i]+1 {
					t.Fatalf("step %d row %d pos %d: not a contiguous window", step, r, i)
				}
				if i > 0 && slices.Contains(st.Starts, off+int64(i)) {
					seg++
				}
				if i == 0 || slices.Contains(st.Starts, off+int64(i)) {
					if docs >= len(ri.Docs) || ri.Docs[docs].RowPos != i {
						t.Fatalf("step %d row %d: BatchInfo docs %+v miss the document at %d", step, r, ri.Docs, i)
					}
					docs++
				}
				if o.seg[r*T+i] != seg {
					t.Fatalf("step %d row %d pos %d: segment %d, want %d", step, r, i, o.seg[r*T+i], seg)
				}
			}
			if docs != len(ri.Docs) {
				t.Fatalf("step %d row %d: BatchInfo lists %d documents, the row has %d", step, r, len(ri.Docs), docs)
			}
			if d := ri.Docs[0]; d.ID != st.IDs[d.Doc] || st.Starts[d.Doc]+d.DocOffset != off {
				t.Fatalf("step %d row %d: first document %+v inconsistent with offset %d", step, r, d, off)
			}
		}
	}
	if st := l.Stats(); st.PadFraction != 0 || st.PadFractionTotal != 0 {
		t.Fatalf("concat packing reports padding: %+v", st)
	}
}

// TestBOSPacking: rows start at a document start; short documents are
// padded with PadTarget targets, long ones truncated; pad_fraction matches.
func TestBOSPacking(t *testing.T) {
	ds := synthDataset(4000)
	cfg := testConfig()
	cfg.Packing = PackBOS
	T := 24
	l := mustNew(t, ds, cfg, Options{SeqLen: T})
	st := ds.Sources[0].Train.(*MemStream)
	seen := map[int64]bool{}
	for step := 0; step < 30; step++ {
		o := fillStep(t, l, step, 8)
		pads := 0
		for r := 0; r < 8; r++ {
			off := int64(o.in[r*T])
			d, ok := slices.BinarySearch(st.Starts, off)
			if !ok {
				t.Fatalf("step %d row %d starts at %d, not a document start", step, r, off)
			}
			if len(seen) == len(st.Starts) { // a new pass
				clear(seen)
			}
			if seen[int64(d)] {
				t.Fatalf("document %d twice in one pass", d)
			}
			seen[int64(d)] = true
			n := int(docEnd(st, int64(d)) - off) // document length
			for i := 0; i < T; i++ {
				in, tg, sg := o.in[r*T+i], o.tg[r*T+i], o.seg[r*T+i]
				switch {
				case i+1 < n:
					if in != int32(off)+int32(i) || tg != in+1 || sg != 0 {
						t.Fatalf("doc %d pos %d: in %d tg %d seg %d", d, i, in, tg, sg)
					}
				case i+1 == n:
					if in != int32(off)+int32(i) || tg != PadTarget || sg != 0 {
						t.Fatalf("doc %d last token pos %d: in %d tg %d seg %d", d, i, in, tg, sg)
					}
					pads++
				default:
					if tg != PadTarget || in != 0 || sg != 1 {
						t.Fatalf("doc %d (len %d) pos %d: want padding, got in %d tg %d seg %d", d, n, i, in, tg, sg)
					}
					pads++
				}
			}
		}
		s := l.Stats()
		if want := float64(pads) / float64(8*T); math.Abs(s.PadFraction-want) > 1e-12 || pads == 0 {
			t.Fatalf("step %d: pad_fraction %v, want %v (%d pads)", step, s.PadFraction, want, pads)
		}
	}
}

// TestMixtureShares: realised shares match the weights within one block's
// rounding over a window; the mixture switches exactly at a stage's step,
// also across a batch-size change; source sequence numbers are never
// reused or skipped.
func TestMixtureShares(t *testing.T) {
	ds := synthDataset(200000, 100000, 50000)
	cfg := testConfig()
	cfg.MixBlock = 100
	cfg.Sources = []SourceConfig{{Name: "src0", Weight: 6}, {Name: "src1", Weight: 3}, {Name: "src2", Weight: 1}}
	cfg.Stages = []Stage{{StartStep: 151, Weights: map[string]float64{"src1": 1, "src2": 1}}}
	sched := batchsched.Schedule{{Start: 0, Batch: 10}, {Start: 100, Batch: 16}}
	l := mustNew(t, ds, cfg, Options{Schedule: sched, SeqLen: 8})
	count := func(from, to int) ([]float64, map[int][]int64) {
		sh := make([]float64, 3)
		seqs := map[int][]int64{}
		n := 0
		for s := from; s < to; s++ {
			info, err := l.BatchInfo(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range info.Rows {
				sh[r.SourceIndex]++
				seqs[r.SourceIndex] = append(seqs[r.SourceIndex], r.Seq)
				n++
			}
		}
		for i := range sh {
			sh[i] /= float64(n)
		}
		return sh, seqs
	}
	sh, _ := count(0, 150)
	for i, w := range []float64{0.6, 0.3, 0.1} {
		if math.Abs(sh[i]-w) > 0.01 {
			t.Fatalf("stage 0 share of src%d = %.4f, want %.2f±0.01", i, sh[i], w)
		}
	}
	// the last step of stage 0 still has src0, the first of stage 1 none
	if sh, _ := count(150, 151); sh[0] == 0 {
		t.Fatalf("step 150 (before the stage) has no src0: %v", sh)
	}
	sh, _ = count(151, 260)
	if sh[0] != 0 || math.Abs(sh[1]-0.5) > 0.01 || math.Abs(sh[2]-0.5) > 0.01 {
		t.Fatalf("stage 1 shares %v, want [0 .5 .5]", sh)
	}
	// sequence numbers of each source: exactly 0..n-1 (the partial block at
	// the stage boundary neither skips nor repeats any)
	_, seqs := count(0, 260)
	for s, js := range seqs {
		slices.Sort(js)
		for i, j := range js {
			if j != int64(i) {
				t.Fatalf("src%d: sequence numbers not contiguous at %d (got %d)", s, i, j)
			}
		}
	}
	// Stats shares of a served step agree with BatchInfo
	fillStep(t, l, 170, 16)
	st := l.Stats()
	info, _ := l.BatchInfo(170)
	for name, v := range info.Shares() {
		if math.Abs(st.MixShare[l.sourceIndex(name)]-v) > 1e-12 {
			t.Fatalf("Stats share %v vs BatchInfo %v", st.MixShare, info.Shares())
		}
	}
	if sum := st.MixShare[0] + st.MixShare[1] + st.MixShare[2]; math.Abs(sum-1) > 1e-9 {
		t.Fatalf("shares sum to %v", sum)
	}
}

// TestEpochs: one pass visits every slot once; the next pass reshuffles;
// repetition is counted, warned about, and refused past max_epochs.
func TestEpochs(t *testing.T) {
	ds := synthDataset(16*50 + 1) // exactly 50 concat slots of T = 16
	var logs bytes.Buffer
	cfg := testConfig()
	cfg.Sources = []SourceConfig{{Name: "src0", Weight: 1, MaxEpochs: 2}}
	l := mustNew(t, ds, cfg, Options{Schedule: ConstantBatch(5), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if l.Slots(0) != 50 {
		t.Fatalf("slots %d, want 50", l.Slots(0))
	}
	var pass [2][]int64
	for step := 0; step < 20; step++ {
		o := fillStep(t, l, step, 5)
		for r := 0; r < 5; r++ {
			pass[step/10] = append(pass[step/10], int64(o.in[r*16])/16)
		}
		ep, err := l.Epochs(step + 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := float64((step+1)*5) / 50; math.Abs(ep[0]-want) > 1e-12 || math.Abs(l.Stats().Epochs[0]-want) > 1e-12 {
			t.Fatalf("step %d: epochs %v / stats %v, want %v", step, ep[0], l.Stats().Epochs, want)
		}
	}
	for p := range pass {
		s := slices.Sorted(slices.Values(pass[p]))
		for i, v := range s {
			if v != int64(i) {
				t.Fatalf("pass %d does not visit every slot once: %v", p, s)
			}
		}
	}
	if slices.Equal(pass[0], pass[1]) {
		t.Fatal("second pass has the same order as the first (no epoch re-randomisation)")
	}
	if !strings.Contains(logs.String(), "source is being repeated") || !strings.Contains(logs.String(), "pass=2") {
		t.Fatalf("no repetition warning in logs: %q", logs.String())
	}
	// a third pass exceeds max_epochs = 2
	err := l.Fill(20, 5, 0, 5, make([]int32, 80), make([]int32, 80), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "max_epochs") || !strings.Contains(err.Error(), "src0") {
		t.Fatalf("want a max_epochs error naming the source, got %v", err)
	}
	// and New refuses the run up front when told its length
	if _, err := New(ds, cfg, Options{SeqLen: 16, Schedule: ConstantBatch(5), TotalSteps: 21}); err == nil || !strings.Contains(err.Error(), "max_epochs") {
		t.Fatalf("New with 21 steps: want a max_epochs error, got %v", err)
	}
	logs.Reset()
	if _, err := New(ds, cfg, Options{SeqLen: 16, Schedule: ConstantBatch(5), TotalSteps: 15, Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "will be repeated") {
		t.Fatalf("New with 1.5 passes does not warn: %q", logs.String())
	}
}

func TestValRows(t *testing.T) {
	ds := synthDataset(3000, 3000)
	cfg := testConfig()
	cfg.ValMaxSeqs = 7
	l := mustNew(t, ds, cfg, Options{SeqLen: 10})
	for s := 0; s < 2; s++ {
		if l.ValRows(s) != 7 {
			t.Fatalf("val rows %d, want 7", l.ValRows(s))
		}
		in, tg, sg := make([]int32, 70), make([]int32, 70), make([]int32, 70)
		if err := l.FillVal(s, 0, 7, in, tg, sg); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 70; i++ {
			if in[i] != int32(s*tokBase+i) || tg[i] != in[i]+1 {
				t.Fatalf("val row token %d = %d, want consecutive from the split's start", i, in[i])
			}
		}
		in2 := make([]int32, 20)
		if err := l.FillVal(s, 5, 2, in2, make([]int32, 20), nil); err != nil || !slices.Equal(in2, in[50:70]) {
			t.Fatalf("FillVal(5,2) = %v, %v", in2, err)
		}
		if err := l.FillVal(s, 6, 2, in2, in2, nil); err == nil {
			t.Fatal("FillVal past ValRows: want error")
		}
	}
	if l.ValRows(5) != 0 {
		t.Fatal("ValRows of an unknown source should be 0")
	}
}

func TestBatchInfoString(t *testing.T) {
	l := mustNew(t, synthDataset(4000, 4000), testConfig(), Options{})
	s, err := l.DescribeStep(3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "step 3: 8 sequences from global index 24") || strings.Count(s, "\n  row ") != 8 || !strings.Contains(s, "s0-d") && !strings.Contains(s, "s1-d") {
		t.Fatalf("unexpected description:\n%s", s)
	}
}

// TestConfigErrors: bad settings are refused with the field named.
func TestConfigErrors(t *testing.T) {
	ds := synthDataset(3000, 40)
	cases := []struct {
		name string
		mod  func(*Config)
		opts Options
		want string
	}{
		{"perm", func(c *Config) { c.Permutation = "random" }, Options{}, "data.permutation"},
		{"packing", func(c *Config) { c.Packing = "zip" }, Options{}, "data.packing"},
		{"block", func(c *Config) { c.MixBlock = 0 }, Options{}, "data.mix_block"},
		{"rounds", func(c *Config) { c.FeistelRounds = 99 }, Options{}, "data.feistel_rounds"},
		{"unknown source", func(c *Config) { c.Sources = []SourceConfig{{Name: "nope", Weight: 1}} }, Options{}, `no source "nope"`},
		{"dup source", func(c *Config) { c.Sources = []SourceConfig{{Name: "src0", Weight: 1}, {Name: "src0", Weight: 1}} }, Options{}, "listed twice"},
		{"neg weight", func(c *Config) { c.Sources = []SourceConfig{{Name: "src0", Weight: -1}} }, Options{}, "data.sources[0] (src0): weight"},
		{"zero weights", func(c *Config) { c.Sources = []SourceConfig{{Name: "src0", Weight: 0}} }, Options{}, "weights sum to 0"},
		{"stage order", func(c *Config) { c.Stages = []Stage{{StartStep: 5}, {StartStep: 5}} }, Options{}, "data.stages[1]: start_step"},
		{"stage source", func(c *Config) { c.Stages = []Stage{{StartStep: 5, Weights: map[string]float64{"x": 1}}} }, Options{}, `data.stages[0].weights: unknown source "x"`},
		{"ramp negative", func(c *Config) {
			c.Stages = []Stage{{StartStep: 5, RampSteps: -1, Weights: map[string]float64{"src0": 1}}}
		}, Options{}, "data.stages[0].ramp_steps = -1"},
		{"ramp huge", func(c *Config) {
			c.Stages = []Stage{{StartStep: 5, RampSteps: MaxRampSteps + 1, Weights: map[string]float64{"src0": 1}}}
		}, Options{}, "data.stages[0].ramp_steps = 100001: want 0..100000"},
		{"ramp past next stage", func(c *Config) {
			c.Stages = []Stage{{StartStep: 5, RampSteps: 11, Weights: map[string]float64{"src0": 1}}, {StartStep: 15, Weights: map[string]float64{"src0": 1}}}
		}, Options{}, "data.stages[0].ramp_steps = 11: the ramp from step 5 reaches its weights at step 15, not before data.stages[1].start_step = 15 (at most 10)"},
		{"tiny source", func(c *Config) {
			c.Sources = []SourceConfig{{Name: "src0", Weight: 1}, {Name: "src1", Weight: 1}}
		}, Options{SeqLen: 64}, `source "src1" has no concat sequence`},
		{"schedule", func(c *Config) {}, Options{Schedule: batchsched.Schedule{{Start: 3, Batch: 4}}}, "batch schedule"},
	}
	for _, c := range cases {
		cfg := testConfig()
		c.mod(&cfg)
		if c.opts.SeqLen == 0 {
			c.opts.SeqLen = 16
		}
		if c.opts.Schedule == nil {
			c.opts.Schedule = ConstantBatch(4)
		}
		_, err := New(ds, cfg, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	l := mustNew(t, ds, func() Config { c := testConfig(); c.Sources = []SourceConfig{{Name: "src0", Weight: 1}}; return c }(), Options{Schedule: ConstantBatch(4)})
	buf := make([]int32, 64)
	for _, f := range []func() error{
		func() error { return l.Fill(0, 5, 0, 4, buf, buf, nil, nil) },      // wrong batch
		func() error { return l.Fill(0, 4, 2, 3, buf, buf, nil, nil) },      // rows past the batch
		func() error { return l.Fill(0, 4, 0, 4, buf[:10], buf, nil, nil) }, // short buffer
		func() error { return l.Fill(-1, 4, 0, 4, buf, buf, nil, nil) },
	} {
		if f() == nil {
			t.Error("bad Fill arguments: want error")
		}
	}
}

// TestStatsWait: Stats counts served steps and non-negative wait time.
func TestStatsWait(t *testing.T) {
	l := mustNew(t, synthDataset(50000), testConfig(), Options{})
	for s := 0; s < 10; s++ {
		fillStep(t, l, s, 4)
	}
	st := l.Stats()
	if st.Batches != 10 || st.Step != 9 || st.WaitSeconds < 0 || st.StepWaitSeconds > st.WaitSeconds || len(st.MixShare) != 1 || st.MixShare[0] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// BenchmarkFill times whole global batches (32 × 512, three sources,
// concat packing) without prefetch.
func BenchmarkFill(b *testing.B) {
	ds := synthDataset(2_000_000, 1_000_000, 500_000)
	cfg := testConfig()
	cfg.MixBlock, cfg.Prefetch = 1024, 0
	l, err := New(ds, cfg, Options{SeqLen: 512, Schedule: ConstantBatch(32), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	in, tg, sg := make([]int32, 32*512), make([]int32, 32*512), make([]int32, 32*512)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Fill(i, 32, 0, 32, in, tg, sg, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(32 * 512 * 4)
}
