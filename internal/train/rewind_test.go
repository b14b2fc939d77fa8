package train

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// shifted is the reference for a rewind with a skip window: step s ≥ from
// (1-based) reads the batch of step s+n.
type shifted struct {
	datasrc.Source
	from, n int
}

func (d shifted) Fill(step, batch, row0, n int, in, tg, sg []int32, srcs []int) error {
	if step+1 >= d.from {
		step += d.n
	}
	return d.Source.Fill(step, batch, row0, n, in, tg, sg, srcs)
}

func dirBytes(t *testing.T, dir string) (files int, bytes int64) {
	t.Helper()
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Name() != "lock" {
			files++
			bytes += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, bytes
}

// TestRewindSkipBitExact: a run rewound to step 4 skipping the batches of
// steps 6–7 with the LR halved for 2 steps, then trained to the end (with
// a crash and resume on the way), has the losses of an uninterrupted run
// whose step s ≥ 6 reads batch(s+2) and whose steps 5–6 have the LR ×0.5.
func TestRewindSkipBitExact(t *testing.T) {
	cases := []struct {
		name     string
		run, ref func(*Options)
	}{
		{"plain", func(*Options) {}, func(*Options) {}},
		// With a batch schedule the batch of step s is batch(s+2), its
		// size included: the change at step 10 comes at step 8 after the
		// skip (from step 6 on).
		{"batch-schedule", func(o *Options) {
			o.Train.BatchSchedule, o.Train.MicroBatch, o.Optim.SqrtBatchScaling = [][]int{{1, 4}, {10, 6}}, 4, true
		}, func(o *Options) {
			o.Train.BatchSchedule, o.Train.MicroBatch, o.Optim.SqrtBatchScaling = [][]int{{1, 4}, {8, 6}}, 4, true
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { testRewindSkip(t, c.run, c.ref) })
	}
}

func testRewindSkip(t *testing.T, mod, refMod func(*Options)) {
	opts := func(dir string) Options {
		o := baseOpts(dir)
		mod(&o)
		return o
	}
	ref := filepath.Join(t.TempDir(), "ref")
	ro := baseOpts(ref)
	refMod(&ro)
	ro.Data = shifted{Source: ro.Data, from: 6, n: 2}
	ro.Debug.LRSpikeAtStep, ro.Debug.LRSpikeSteps, ro.Debug.LRSpikeFactor = 5, 2, 0.5
	if _, err := Run(context.Background(), ro); err != nil {
		t.Fatal(err)
	}
	want := lossSeq(t, ref)

	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), opts(dir)); err != nil {
		t.Fatal(err)
	}
	orig := lossSeq(t, dir)
	if slices.Equal(orig, want) {
		t.Fatal("the reference does not differ from the plain run: the test proves nothing")
	}
	before, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	nFiles, nBytes := dirBytes(t, filepath.Join(dir, "checkpoints"))

	iv, err := rewind.Rewind(dir, rewind.Options{To: "5", SkipFrom: 6, SkipTo: 7, LRScale: 0.5, LRSteps: 2, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if iv.ToStep != 4 || iv.FromStep != 12 || iv.SkipSteps != 2 || iv.ID != "rewind-1" {
		t.Fatalf("intervention %+v", iv)
	}
	// Nothing deleted: metrics.jsonl + the archive hold every byte; the
	// newer checkpoints are under checkpoints-archive/rewind-1.
	kept, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	arch, err := os.ReadFile(filepath.Join(dir, runlog.MetricsArchiveName(iv.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if len(kept)+len(arch) != len(before) || !strings.HasPrefix(string(before), string(kept)) || !strings.HasSuffix(string(before), string(arch)) {
		t.Fatalf("metrics: %d kept + %d archived bytes, had %d", len(kept), len(arch), len(before))
	}
	if last, _ := runlog.LastStep(filepath.Join(dir, "metrics.jsonl")); last != 4 {
		t.Fatalf("metrics.jsonl reaches step %d after the rewind, want 4", last)
	}
	f1, b1 := dirBytes(t, filepath.Join(dir, "checkpoints"))
	f2, b2 := dirBytes(t, filepath.Join(dir, rewind.ArchiveDir))
	if f1+f2 != nFiles || b1+b2 != nBytes {
		t.Fatalf("checkpoints: %d+%d files, %d+%d bytes; had %d files, %d bytes", f1, f2, b1, b2, nFiles, nBytes)
	}
	for _, n := range []int{8, 12} {
		if _, err := os.Stat(filepath.Join(dir, rewind.ArchiveDir, iv.ID, checkpoint.Name(n))); err != nil {
			t.Errorf("checkpoint %d not archived: %v", n, err)
		}
	}
	ivs, err := runlog.ReadInterventions(dir)
	if err != nil || len(ivs) != 1 || ivs[0].ID != iv.ID {
		t.Fatalf("interventions %+v, %v", ivs, err)
	}

	// Train on, crashing at step 10 (checkpoint 8 is the resume point).
	o := opts(dir)
	o.Observers = []Observer{stopAt{step: 10}}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want crash, got %v", err)
	}
	res, err := Run(context.Background(), opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || filepath.Base(res.Checkpoint) != checkpoint.Name(12) {
		t.Errorf("result %+v", res)
	}
	if got := lossSeq(t, dir); !slices.Equal(got, want) {
		t.Errorf("rewound run's losses differ from the reference:\n got %v\nwant %v", got, want)
	}
	l, err := checkpoint.Load(filepath.Join(dir, "checkpoints", checkpoint.Name(12)))
	if err != nil {
		t.Fatal(err)
	}
	if l.State.DataOffset != 2 || !slices.Equal(l.State.Interventions, []string{"rewind-1"}) {
		t.Errorf("state: data_offset %d, interventions %v", l.State.DataOffset, l.State.Interventions)
	}
	for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile} {
		if fileSum(t, filepath.Join(ref, "checkpoints", checkpoint.Name(12)), f) != fileSum(t, l.Dir, f) {
			t.Errorf("%s differs between the reference and the rewound run", f)
		}
	}
}

// TestRewindRefusesAbandonedCheckpoint: a checkpoint of the abandoned
// trajectory put back into checkpoints/ is refused, not resumed with the
// wrong data.
func TestRewindRefusesAbandonedCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), baseOpts(dir)); err != nil {
		t.Fatal(err)
	}
	iv, err := rewind.Rewind(dir, rewind.Options{To: "4", SkipFrom: 5, SkipTo: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, rewind.ArchiveDir, iv.ID, checkpoint.Name(8)), filepath.Join(dir, "checkpoints", checkpoint.Name(8))); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), baseOpts(dir))
	if err == nil || !strings.Contains(err.Error(), "abandoned") {
		t.Fatalf("want the abandoned checkpoint refused, got %v", err)
	}
}

func TestRewindBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps = 4
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	for _, c := range []struct {
		o    rewind.Options
		want string
	}{
		{rewind.Options{To: "2"}, "no valid checkpoint"},
		{rewind.Options{To: "nowhere"}, "want last, a step"},
		{rewind.Options{To: "last-good"}, "no checkpoint was confirmed healthy"}, // no health reporter: unknown
		{rewind.Options{To: "last", SkipFrom: 3, SkipTo: 5}, "must start after"},
		{rewind.Options{To: "last", SkipFrom: 7, SkipTo: 5}, "ends before"},
	} {
		if _, err := rewind.Rewind(dir, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
	after, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if string(before) != string(after) {
		t.Error("a refused rewind changed metrics.jsonl")
	}
	if _, err := os.Stat(filepath.Join(dir, runlog.InterventionsFile)); err == nil {
		t.Error("a refused rewind wrote an intervention")
	}
}

func TestEffectiveInterventions(t *testing.T) {
	ivs := []runlog.Intervention{
		{ID: "a", ToStep: 10, SkipFrom: 12, SkipTo: 13, SkipSteps: 2},
		{ID: "b", ToStep: 30, SkipFrom: 31, SkipTo: 31, SkipSteps: 1, LRScale: 0.5, LRSteps: 5},
		{ID: "c", ToStep: 20, LRScale: 0.25},
	}
	eff := rewind.Effective(ivs)
	var ids []string
	for _, iv := range eff {
		ids = append(ids, iv.ID)
	}
	if !slices.Equal(ids, []string{"a", "c"}) {
		t.Fatalf("effective %v, want [a c] (c supersedes b)", ids)
	}
	p := rewind.NewPlan(eff)
	for _, c := range []struct {
		s, off int
		lr     float64
		ids    int
	}{{5, 0, 1, 0}, {11, 0, 1, 1}, {12, 2, 1, 1}, {21, 2, 0.25, 2}, {40, 2, 0.25, 2}} {
		if got := p.DataOffset(c.s); got != c.off {
			t.Errorf("step %d: offset %d, want %d", c.s, got, c.off)
		}
		if got := p.LRScale(c.s); got != c.lr {
			t.Errorf("step %d: lr scale %g, want %g", c.s, got, c.lr)
		}
		if got := len(p.Applied(c.s)); got != c.ids {
			t.Errorf("step %d: %d applied, want %d", c.s, got, c.ids)
		}
	}
}

// TestRescueSkip: a rewind that supersedes earlier ones keeps what they
// skipped: the new window covers, in data steps, their windows and the
// batches the current trajectory trained at the new window's steps.
func TestRescueSkip(t *testing.T) {
	iv := func(id string, to, from, n int) runlog.Intervention {
		return runlog.Intervention{ID: id, ToStep: to, FromStep: from + n, SkipFrom: from, SkipTo: from + n - 1, SkipSteps: n}
	}
	for _, tc := range []struct {
		name             string
		all              []runlog.Intervention
		ck, from, to     int
		wantFrom, wantTo int
	}{
		{"no earlier rewind", nil, 10, 18, 27, 18, 27},
		// rewind-1 (to 10) skipped data 18–27; in its trajectory step 20
		// trains data 30. Back to 10 again, skipping steps 20–29 (data
		// 30–39): the window covers data 18–39.
		{"superseded, same checkpoint", []runlog.Intervention{iv("r1", 10, 18, 10)}, 10, 20, 29, 18, 39},
		// rewind-1 back to 10 stays in force when the new one goes back
		// only to 25: its offset of 10 holds, the new window is its own.
		{"earlier rewind kept", []runlog.Intervention{iv("r1", 10, 18, 10)}, 25, 30, 39, 30, 39},
		// superseded with the new window before the old one
		{"new window first", []runlog.Intervention{iv("r1", 10, 30, 5)}, 10, 15, 19, 15, 34},
		// rewind-1 back to 20 skipped steps 30–39; back to 25 now, with
		// the bad batches at steps 32–41 of its trajectory (data 42–51):
		// rewind-1 stays, so the new window starts where step 32 trains
		// data 42, and skips 10.
		{"kept window after the checkpoint", []runlog.Intervention{iv("r1", 20, 30, 10)}, 25, 32, 41, 32, 41},
	} {
		f, to, ok := rewind.RescueSkip(tc.all, tc.ck, tc.from, tc.to)
		if !ok || f != tc.wantFrom || to != tc.wantTo {
			t.Errorf("%s: window %d–%d (%v), want %d–%d", tc.name, f, to, ok, tc.wantFrom, tc.wantTo)
		}
	}
}

// TestRewindToInit: a rewind to the run's initialisation archives every
// checkpoint and metrics line; the next start trains from the initial
// weights with the skip applied, bit for bit as a fresh run whose data
// skips the same batches.
func TestRewindToInit(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	ro := baseOpts(ref)
	ro.Data = shifted{Source: ro.Data, from: 6, n: 2}
	if _, err := Run(context.Background(), ro); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), baseOpts(dir)); err != nil {
		t.Fatal(err)
	}
	iv, err := rewind.Rewind(dir, rewind.Options{To: rewind.Init, SkipFrom: 6, SkipTo: 7, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if iv.ToStep != 0 || iv.Checkpoint != rewind.Init || len(iv.ArchivedCheckpoints) == 0 {
		t.Fatalf("intervention %+v", iv)
	}
	if list, _ := checkpoint.ListDir(filepath.Join(dir, "checkpoints")); len(list) != 0 {
		t.Fatalf("checkpoints left after a rewind to init: %v", list)
	}
	if _, err := Run(context.Background(), baseOpts(dir)); err != nil {
		t.Fatal(err)
	}
	if got, want := lossSeq(t, dir), lossSeq(t, ref); !slices.Equal(got, want) {
		t.Errorf("losses after the rewind to init\n%v\nwant the reference's\n%v", got, want)
	}
}
