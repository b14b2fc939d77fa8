package train

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// corpus is a small deterministic text with some structure to learn.
func corpus() []byte {
	var b bytes.Buffer
	words := []string{"the", "king", "shall", "speak", "of", "love", "and", "war", "to", "my", "lord", "good", "night"}
	x := uint64(7)
	for b.Len() < 20000 {
		x = datasrc.SplitMix(x)
		b.WriteString(words[x%uint64(len(words))])
		if x%11 == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

// tinyModel is small but above the kernels' serial threshold (the q/k/v
// GEMM of a 4×32 batch is 4·32·96·32 ≈ 393k multiply-adds > 2^17), so the
// resume tests also cover the multi-threaded code paths.
func tinyModel() model.Config {
	c := model.DefaultConfig()
	c.DModel, c.NLayers, c.NHeads, c.NKVHeads, c.MLPHidden, c.SeqLen = 32, 1, 2, 2, 64, 32
	return c
}

func baseOpts(dir string) Options {
	oc := optim.DefaultConfig()
	oc.LR, oc.Warmup = 3e-3, 2
	oc.UpdateWindow, oc.UpdateMinSteps = 8, 3 // make the windows matter within a few steps
	oc.SkipWindow, oc.SkipMinSteps = 8, 3
	oc.EMABeta = 0.9
	tc := DefaultConfig()
	tc.Steps, tc.BatchSize, tc.EvalEvery, tc.EvalBatches, tc.LogEvery, tc.PeakGFLOPS = 12, 4, 6, 1, 0, 1
	cc := DefaultCheckpointConfig()
	cc.Every, cc.Keep = 4, 5
	data := corpus()
	n := len(data) * 9 / 10
	return Options{
		Dir: dir, Seed: 42, Model: tinyModel(), Optim: oc, Train: tc, Checkpoint: cc,
		Init: DefaultInitConfig(), Debug: faults.Default(),
		Data: datasrc.NewBytesSource(data[:n], data[n:], 32, 42), ConfigHash: "test",
		Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
	}
}

// readLines returns the step lines (those with train_loss_raw) of metrics.jsonl as raw JSON maps.
func readLines(t *testing.T, dir string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bad metrics line %q: %v", sc.Text(), err)
		}
		if _, ok := m["train_loss_raw"]; ok {
			out = append(out, m)
		}
	}
	return out
}

func lossSeq(t *testing.T, dir string) []string {
	var out []string
	for _, m := range readLines(t, dir) {
		out = append(out, string(m["step"])+":"+string(m["train_loss_raw"]))
	}
	return out
}

type stopAt struct {
	step   int
	cancel context.CancelFunc // nil: return an error (simulates kill -9: no checkpoint)
}

func (s stopAt) OnStep(m *runlog.Step) error {
	if m.Step == s.step {
		if s.cancel != nil {
			s.cancel()
			return nil
		}
		return errors.New("simulated crash")
	}
	return nil
}
func (stopAt) OnEval(*runlog.Eval) error             { return nil }
func (stopAt) OnCheckpoint(*runlog.Checkpoint) error { return nil }

func fileSum(t *testing.T, dir, name string) string {
	t.Helper()
	h, _, err := checkpoint.HashFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestResumeBitExact(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Options)
	}{
		{"plain", func(*Options) {}},
		{"grad-accumulation", func(o *Options) { o.Train.MicroBatch = 3 }}, // 4 = 3 + 1
		{"batch-schedule", func(o *Options) {
			o.Train.BatchSchedule = [][]int{{1, 4}, {10, 6}} // metrics steps: 6 from step 10 on
			o.Train.MicroBatch = 4
			o.Optim.SqrtBatchScaling = true
		}},
		{"bf16", func(o *Options) { o.Train.Precision = "bf16" }},                                                // KESTREL_BF16_REFERENCE=1 below
		{"parallel-micro-batches", func(o *Options) { o.Train.MicroBatch, o.Train.ParallelMicroBatches = 1, 2 }}, // 2 rounds of 2
		{"parallel-odd", func(o *Options) { o.Train.MicroBatch, o.Train.ParallelMicroBatches = 3, 2 }},           // 3 beside 1
	}
	t.Setenv(ops.BF16ReferenceEnv, "1")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := filepath.Join(t.TempDir(), "ref")
			o := baseOpts(ref)
			c.mod(&o)
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			want := lossSeq(t, ref)
			if len(want) != 12 {
				t.Fatalf("%d step lines", len(want))
			}
			if c.name == "batch-schedule" {
				for _, m := range readLines(t, ref) {
					var step, batch int
					if json.Unmarshal(m["step"], &step) != nil || json.Unmarshal(m["batch_size"], &batch) != nil {
						t.Fatalf("step line %v", m)
					}
					if wantB := map[bool]int{true: 6, false: 4}[step >= 10]; batch != wantB {
						t.Fatalf("step %d: batch_size %d, want %d", step, batch, wantB)
					}
				}
			}

			// Crash at step 10 (between the checkpoints at 8 and 12), then resume.
			dir := filepath.Join(t.TempDir(), "run")
			o2 := baseOpts(dir)
			c.mod(&o2)
			o2.Observers = []Observer{stopAt{step: 10}}
			if _, err := Run(context.Background(), o2); err == nil || !strings.Contains(err.Error(), "simulated crash") {
				t.Fatalf("want crash, got %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "checkpoints", checkpoint.Name(10))); err == nil {
				t.Fatal("a crash must not write a checkpoint")
			}
			o3 := baseOpts(dir)
			c.mod(&o3)
			res, err := Run(context.Background(), o3)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Resumed || filepath.Base(res.Checkpoint) != checkpoint.Name(12) {
				t.Errorf("result %+v", res)
			}
			got := lossSeq(t, dir)
			if !slices.Equal(got, want) {
				t.Errorf("losses differ after resume:\n got %v\nwant %v", got, want)
			}
			a, b := filepath.Join(ref, "checkpoints", checkpoint.Name(12)), filepath.Join(dir, "checkpoints", checkpoint.Name(12))
			for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile} {
				if fileSum(t, a, f) != fileSum(t, b, f) {
					t.Errorf("%s differs between the uninterrupted and the resumed run", f)
				}
			}
		})
	}
}

func TestCtrlCWritesCheckpointAndResumes(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	if _, err := Run(context.Background(), baseOpts(ref)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := baseOpts(dir)
	o.Observers = []Observer{stopAt{step: 7, cancel: cancel}}
	res, err := Run(ctx, o)
	if err != nil || !res.Interrupted || res.Step != 7 {
		t.Fatalf("res %+v err %v", res, err)
	}
	l, err := checkpoint.Load(filepath.Join(dir, "checkpoints", checkpoint.Name(7)))
	if err != nil || l.State.Kind != "interrupt" {
		t.Fatalf("interrupt checkpoint: %v %+v", err, l)
	}
	if _, err := Run(context.Background(), baseOpts(dir)); err != nil {
		t.Fatal(err)
	}
	if got, want := lossSeq(t, dir), lossSeq(t, ref); !slices.Equal(got, want) {
		t.Errorf("losses differ:\n got %v\nwant %v", got, want)
	}
}

func TestNaNStopsWithoutCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Debug.NaNAtStep = 6
	_, err := Run(context.Background(), o)
	var ne *NaNError
	if !errors.As(err, &ne) || ne.Step != 6 || !strings.Contains(err.Error(), checkpoint.Name(4)) {
		t.Fatalf("want NaNError at step 6 naming step-4, got %v", err)
	}
	// Only step-4 exists, and it verifies.
	list, _ := checkpoint.ListDir(filepath.Join(dir, "checkpoints"))
	if len(list) != 1 || list[0].Step != 4 {
		t.Fatalf("checkpoints %v", list)
	}
	if err := checkpoint.Verify(list[0].Dir); err != nil {
		t.Error(err)
	}
	lines := readLines(t, dir)
	if n := len(lines); n != 5 {
		t.Errorf("%d committed step lines, want 5", n)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if !strings.Contains(string(raw), `"event":"nan_inf"`) {
		t.Error("no nan_inf event line")
	}
}

func TestCorruptCheckpointFallback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps = 8
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "checkpoints")
	for _, tc := range []struct {
		name    string
		corrupt func(string)
		file    string
	}{
		{"flipped byte", func(d string) {
			p := filepath.Join(d, checkpoint.ModelFile)
			b, _ := os.ReadFile(p)
			b[len(b)-5] ^= 0x40
			os.WriteFile(p, b, 0o644)
		}, checkpoint.ModelFile},
		{"truncated", func(d string) {
			p := filepath.Join(d, checkpoint.OptimizerFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
		}, checkpoint.OptimizerFile},
		{"missing state", func(d string) { os.Remove(filepath.Join(d, checkpoint.StateFile)) }, checkpoint.StateFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			copyDir(t, root, tmp)
			tc.corrupt(filepath.Join(tmp, checkpoint.Name(8)))
			os.MkdirAll(filepath.Join(tmp, ".tmp-step-00000012-123"), 0o755) // an interrupted write
			var logBuf bytes.Buffer
			l, err := checkpoint.Latest(tmp, slog.New(slog.NewTextHandler(&logBuf, nil)))
			if err != nil || l.State.Step != 4 {
				t.Fatalf("fallback: %v %+v", err, l)
			}
			if !strings.Contains(logBuf.String(), tc.file) {
				t.Errorf("log does not name %s: %s", tc.file, logBuf.String())
			}
			if err := checkpoint.Verify(filepath.Join(tmp, checkpoint.Name(8))); err == nil || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("verify error does not name %s: %v", tc.file, err)
			}
		})
	}
	// Nothing valid at all: an error, not a silent fresh start.
	tmp := t.TempDir()
	copyDir(t, root, tmp)
	for _, s := range []int{4, 8} {
		os.Remove(filepath.Join(tmp, checkpoint.Name(s), checkpoint.SumsFile))
	}
	if _, err := checkpoint.Latest(tmp, nil); err == nil {
		t.Error("accepted a directory with no valid checkpoint")
	}
	// Resume from the fallback reproduces the run.
	run2 := filepath.Join(t.TempDir(), "run2")
	copyDir(t, dir, run2)
	b, _ := os.ReadFile(filepath.Join(run2, "checkpoints", checkpoint.Name(8), checkpoint.ModelFile))
	b[100] ^= 1
	os.WriteFile(filepath.Join(run2, "checkpoints", checkpoint.Name(8), checkpoint.ModelFile), b, 0o644)
	res, err := Run(context.Background(), o2(run2, 8))
	if err != nil || res.Step != 8 {
		t.Fatalf("resume after corruption: %+v %v", res, err)
	}
	if got, want := lossSeq(t, run2), lossSeq(t, dir); !slices.Equal(got, want) {
		t.Errorf("losses differ:\n got %v\nwant %v", got, want)
	}
}

func o2(dir string, steps int) Options {
	o := baseOpts(dir)
	o.Train.Steps = steps
	return o
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKeepPolicy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps, o.Train.EvalEvery = 10, 0
	o.Checkpoint = CheckpointConfig{Every: 2, Keep: 1, PermanentEvery: 4}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	list, _ := checkpoint.ListDir(filepath.Join(dir, "checkpoints"))
	var steps []int
	for _, c := range list {
		steps = append(steps, c.Step)
	}
	if !slices.Equal(steps, []int{10, 8, 6, 4}) {
		t.Errorf("kept %v, want [10 8 6 4] (final, permanent 8 and 4, newest rolling 6)", steps)
	}
}

func TestFreshRefusesExistingDir(t *testing.T) {
	dir := t.TempDir()
	o := baseOpts(dir)
	o.Fresh = true
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("want refusal, got %v", err)
	}
}

func TestWarmStartQKNorm(t *testing.T) {
	src := filepath.Join(t.TempDir(), "llama")
	o := baseOpts(src)
	o.Train.Steps = 4
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	srcCk, _ := checkpoint.Load(filepath.Join(src, "checkpoints", checkpoint.Name(4)))

	dst := filepath.Join(t.TempDir(), "qk")
	w := baseOpts(dst)
	w.Model.QKNorm = true
	w.Init = InitConfig{From: src, Mode: "full"}
	w.Train.Steps = 8
	w.Optim.RewarmAt, w.Optim.RewarmSteps = []int{4}, 2
	var firstParams []float32
	w.NewNet = func(c model.Config, seed uint64) (Net, error) {
		n, err := NewModelNet(c, seed)
		if err == nil {
			firstParams = n.Params()
		}
		return n, err
	}
	w.Observers = []Observer{paramsSnap{}}
	res, err := Run(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	rep := res.WarmStart
	if rep == nil || len(rep.Mismatched) != 0 || len(rep.Unused) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if !slices.Equal(rep.Initialized, []string{"model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.k_norm.weight"}) {
		t.Errorf("initialized %v", rep.Initialized)
	}
	if len(rep.Copied) != len(srcCk.Model.Tensors) {
		t.Errorf("copied %d of %d", len(rep.Copied), len(srcCk.Model.Tensors))
	}
	_ = firstParams
	lines := readLines(t, dst)
	if string(lines[0]["step"]) != "5" || string(lines[0]["lr_phase"]) != `"rewarm"` || string(lines[0]["lr_cycle"]) != "1" {
		t.Errorf("first line after a full warm-start: step %s phase %s cycle %s", lines[0]["step"], lines[0]["lr_phase"], lines[0]["lr_cycle"])
	}
	man, _ := os.ReadFile(filepath.Join(dst, "manifest.json"))
	if !strings.Contains(string(man), "q_norm.weight") {
		t.Error("manifest.json lacks the warm-start report")
	}

	// A different MLP width: those tensors are listed as mismatched.
	dst2 := filepath.Join(t.TempDir(), "wide")
	w2 := baseOpts(dst2)
	w2.Model.MLPHidden = 48
	w2.Init = InitConfig{From: filepath.Join(src, "checkpoints", checkpoint.Name(4)), Mode: "weights"}
	w2.Train.Steps = 2
	res, err = Run(context.Background(), w2)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.WarmStart.Mismatched); n != 3 || !strings.Contains(res.WarmStart.Mismatched[0], "gate_proj") {
		t.Errorf("mismatched %v", res.WarmStart.Mismatched)
	}
	if l := readLines(t, dst2); string(l[0]["step"]) != "1" {
		t.Errorf("weights mode must restart the step count, first step %s", l[0]["step"])
	}
}

type paramsSnap struct{}

func (paramsSnap) OnStep(*runlog.Step) error             { return nil }
func (paramsSnap) OnEval(*runlog.Eval) error             { return nil }
func (paramsSnap) OnCheckpoint(*runlog.Checkpoint) error { return nil }

func TestWarmStartCopiesWeights(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	o := baseOpts(src)
	o.Train.Steps = 3
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ck, _ := checkpoint.Load(filepath.Join(src, "checkpoints", checkpoint.Name(3)))
	// Build the target net, warm-start it, and compare tensors before any step.
	tr := &trainer{o: baseOpts(t.TempDir()), log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))}
	tr.o.Model.QKNorm = true
	tr.o.Init = InitConfig{From: src, Mode: "weights+optimizer"}
	tr.net, _ = NewModelNet(tr.o.Model, 99)
	tr.ts = tr.net.Tensors()
	var spans []optim.Span
	for _, x := range tr.ts {
		spans = append(spans, optim.Span{Name: x.Name, Offset: x.Offset, Size: x.Size, Kind: x.Kind})
	}
	tr.opt, _ = optim.NewAdamW(tr.o.Optim, len(tr.net.Params()), spans)
	tr.ema = optim.NewEMA(0.9, tr.net.Params())
	rep, err := tr.warmStart()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tr.ts {
		got := tr.net.Params()[x.Offset : x.Offset+x.Size]
		if slices.Contains(rep.Initialized, x.Name) {
			for _, v := range got {
				if v != 1 {
					t.Fatalf("%s: new QK-Norm gains should be 1, got %v", x.Name, v)
				}
			}
			continue
		}
		st, _ := ck.Model.Get(x.Name)
		want, _ := st.Float32()
		if !slices.Equal(got, want) {
			t.Errorf("%s not copied", x.Name)
		}
		m, _ := ck.Optim.Get(x.Name + ".exp_avg")
		wm, _ := m.Float32()
		if !slices.Equal(tr.opt.M[x.Offset:x.Offset+x.Size], wm) {
			t.Errorf("%s moments not copied", x.Name)
		}
	}
	if tr.opt.Steps != 3 || tr.st.Step != 0 {
		t.Errorf("adam steps %d, step %d", tr.opt.Steps, tr.st.Step)
	}
}

func TestMetricsLineAndDebugKnobs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps = 6
	o.Debug.LRSpikeAtStep, o.Debug.LRSpikeFactor, o.Debug.LRSpikeSteps = 4, 10, 2
	o.Debug.CorruptBatchAtStep = 3
	o.Optim.Schedule = "constant"
	o.Optim.SkipBadSteps = false
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, dir)
	for _, k := range []string{"step", "tokens_seen", "wall_time", "train_loss_raw", "train_loss_ema", "learning_rate", "lr_phase",
		"grad_global_norm", "update_norm", "update_norm_post_clip", "update_to_weight", "clipped", "skipped", "z_loss",
		"tokens_per_sec", "step_time", "data_wait_time", "forward_time", "backward_time", "optimizer_time", "mfu",
		"max_attn_logit", "attn_entropy", "residual_rms", "activation_outlier_rate", "max_attn_logit/layer0/head1",
		"attn_entropy/layer0/head0", "residual_rms/layer0"} {
		if _, ok := lines[0][k]; !ok {
			t.Errorf("metrics line lacks %q", k)
		}
	}
	lr := func(i int) float64 {
		var v float64
		json.Unmarshal(lines[i]["learning_rate"], &v)
		return v
	}
	if lr(3) != 10*lr(5) || lr(4) != lr(3) || lr(2) != lr(5) {
		t.Errorf("lr spike: %v %v %v %v", lr(2), lr(3), lr(4), lr(5))
	}
	// The corrupted batch changes step 3's loss and nothing before it.
	ref := filepath.Join(t.TempDir(), "ref")
	o.Dir, o.Debug.CorruptBatchAtStep = ref, 0
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	rl := readLines(t, ref)
	for i := 0; i < 3; i++ {
		same := string(rl[i]["train_loss_raw"]) == string(lines[i]["train_loss_raw"])
		if same != (i < 2) {
			t.Errorf("step %d: corrupted-run loss %s vs reference %s", i+1, lines[i]["train_loss_raw"], rl[i]["train_loss_raw"])
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if !strings.Contains(string(raw), `"val_loss_ema"`) || !strings.Contains(string(raw), `"ema_gap"`) {
		t.Error("no eval line with val_loss_ema and ema_gap")
	}
	hf, _ := os.ReadFile(filepath.Join(dir, "checkpoints", checkpoint.Name(6), checkpoint.HFConfigFile))
	if !strings.Contains(string(hf), `"LlamaForCausalLM"`) || !strings.Contains(string(hf), `"hidden_size": 32`) {
		t.Errorf("config.json: %s", hf)
	}
}

func TestBytesSource(t *testing.T) {
	data := corpus()
	s := datasrc.NewBytesSource(data[:10000], data[10000:], 16, 1)
	T := 16
	full := make([]int32, 4*T)
	tg := make([]int32, 4*T)
	if err := s.Fill(5, 4, 0, 4, full, tg, nil, nil); err != nil {
		t.Fatal(err)
	}
	part := make([]int32, 4*T)
	for r := 0; r < 4; r++ {
		s.Fill(5, 4, r, 1, part[r*T:], make([]int32, T), nil, nil)
	}
	if !slices.Equal(full, part) {
		t.Error("rows depend on the micro-batch split")
	}
	for i := 0; i < 4*T; i++ {
		if i%T != T-1 && tg[i] != full[i+1] {
			t.Fatalf("targets are not inputs shifted by one at %d", i)
		}
	}
	other := make([]int32, 4*T)
	s.Fill(6, 4, 0, 4, other, tg, nil, nil)
	if slices.Equal(full, other) {
		t.Error("different steps gave the same batch")
	}
	if s.ValRows(0) != (len(data)-10000-1)/T {
		t.Errorf("val rows %d", s.ValRows(0))
	}
	if err := s.Fill(1, 4, 3, 2, full, tg, nil, nil); err == nil {
		t.Error("rows beyond the batch accepted")
	}
	path := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(path, data, 0o644)
	b, err := datasrc.OpenBytes(path, "", 0.1, T, 1)
	if err != nil || b.TrainBytes() != len(data)*9/10 || b.TrainBytes()+b.ValBytes() != len(data) {
		t.Errorf("holdout: %v %d %d", err, b.TrainBytes(), b.ValBytes())
	}
	if _, err := datasrc.OpenBytes(filepath.Join(t.TempDir(), "nope"), "", 0.1, T, 1); err == nil || !strings.Contains(err.Error(), "data.train") {
		t.Errorf("missing file: %v", err)
	}
}

func TestTimeBasedCheckpointsAndStaleTemps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	stale := filepath.Join(dir, "checkpoints", ".tmp-step-00000003-999")
	os.MkdirAll(stale, 0o755)
	o := baseOpts(dir)
	o.Train.Steps, o.Train.EvalEvery = 5, 0
	o.Checkpoint = CheckpointConfig{EveryMinutes: 1e-9, Keep: 2} // due after every step
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("stale temporary checkpoint directory not removed")
	}
	list, _ := checkpoint.ListDir(filepath.Join(dir, "checkpoints"))
	var steps []int
	for _, c := range list {
		steps = append(steps, c.Step)
	}
	if !slices.Equal(steps, []int{5, 4, 3}) {
		t.Errorf("kept %v, want [5 4 3] (final + the 2 newest rolling)", steps)
	}
}
