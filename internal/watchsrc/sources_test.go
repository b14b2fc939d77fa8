package watchsrc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kestrel-lm/kestrel/internal/tfevents"
	"github.com/kestrel-lm/kestrel/monitor"
)

const spikeStep = 200

// lossAt is a healthy decaying loss with a 16× spike at spikeStep.
func lossAt(c *curve, s int64) float64 {
	l := c.sample(s).Values["train_loss_raw"]
	if s == spikeStep {
		l *= 16
	}
	return l
}

// writeLines writes lines 1..260 of another trainer's log, one per step,
// with head before them.
func writeLines(t *testing.T, path, head string, line func(s int64, loss float64) string) {
	t.Helper()
	c := newCurve(11)
	var b strings.Builder
	b.WriteString(head)
	for s := int64(1); s <= 260; s++ {
		b.WriteString(line(s, lossAt(c, s)))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runWatch(t *testing.T, path string) (*Result, []monitor.Alert, error) {
	t.Helper()
	var got []monitor.Alert
	res, err := Run(context.Background(), path, testConfig(), RunOptions{Logger: quietLogger()}, func(a monitor.Alert) { got = append(got, a) })
	return res, got, err
}

// TestWatchRecognisesOtherTrainers: without --map, the logs of nanoGPT,
// llm.c, W&B and Keras are read under kestrel's names and a 16× loss spike
// raises the spike alert (before: "0 SEV0, 0 SEV1, 0 SEV2").
func TestWatchRecognisesOtherTrainers(t *testing.T) {
	tests := []struct {
		name, file, head string
		line             func(s int64, loss float64) string
		want             []string // kestrel names the samples must carry
	}{
		{"nanoGPT JSONL", "log.jsonl", "", func(s int64, l float64) string {
			return fmt.Sprintf(`{"iter": %d, "loss": %.4f, "lr": 0.0006, "mfu": 12.5}`+"\n", s, l)
		}, []string{"train_loss_raw", "learning_rate"}},
		{"nanoGPT stdout", "train.log", "tokens per iteration will be: 16,384\nnumber of parameters: 10.65M\n", func(s int64, l float64) string {
			out := fmt.Sprintf("iter %d: loss %.4f, time 43.21ms, mfu 12.01%%\n", s, l)
			if s%50 == 0 {
				out = fmt.Sprintf("step %d: train loss %.4f, val loss %.4f\n", s, l, l+0.1) + out
			}
			return out
		}, []string{"train_loss_raw", "step_time", "mfu", "val_loss", "train_loss_eval"}},
		{"llm.c main.log", "main.log", "", func(s int64, l float64) string {
			out := fmt.Sprintf("s:%d trl:%.4f lr:0.000600 norm:1.05\n", s, l)
			if s%50 == 0 {
				out += fmt.Sprintf("s:%d tel:%.4f\ns:%d eval:0.2950\n", s, l+0.1, s)
			}
			return out
		}, []string{"train_loss_raw", "learning_rate", "grad_global_norm", "val_loss"}},
		{"W&B history CSV", "history.csv", "_step,_runtime,_timestamp,train/loss,train/lr,val/loss\n", func(s int64, l float64) string {
			val := ""
			if s%50 == 0 {
				val = fmt.Sprintf("%.4f", l+0.1)
			}
			return fmt.Sprintf("%d,%d,%d,%.4f,0.0006,%s\n", s, s, 1700000000+s, l, val)
		}, []string{"train_loss_raw", "learning_rate", "val_loss"}},
		{"W&B chart CSV", "chart.csv", `"Step","run-1 - train/loss","run-1 - train/loss__MIN","run-1 - train/loss__MAX"` + "\n", func(s int64, l float64) string {
			return fmt.Sprintf("%d,%.4f,%.4f,%.4f\n", s, l, l-1, l+1)
		}, []string{"train_loss_raw"}},
		{"W&B history JSONL", "wandb-history.jsonl", "", func(s int64, l float64) string {
			return fmt.Sprintf(`{"_step": %d, "_runtime": %d, "_timestamp": %d, "train/loss": %.4f, "train/grad_norm": 0.5}`+"\n", s, s, 1700000000+s, l)
		}, []string{"train_loss_raw", "grad_global_norm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			writeLines(t, path, tc.head, tc.line)
			seen := map[string]bool{}
			var steps []int64
			if _, err := Read(context.Background(), path, Options{}, func(s monitor.Sample) error {
				for k := range s.Values {
					seen[k] = true
				}
				steps = append(steps, s.Step)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !seen[w] {
					t.Errorf("no %s among %v", w, seen)
				}
			}
			if len(steps) == 0 || steps[0] != 1 {
				t.Errorf("steps start %v", steps[:min(3, len(steps))])
			}
			res, got, err := runWatch(t, path)
			if err != nil {
				t.Fatal(err)
			}
			if a, ok := rulesFired(got)[monitor.RuleLossSpike]; !ok || a.Step != spikeStep {
				t.Errorf("16× spike not raised: %d alerts %v", len(got), res.Counts)
			}
		})
	}
}

// tensorEvent is a tensorflow.Event holding one TF2 scalar summary: the
// value as a float32 tensor with raw tensor_content (what tf.summary.scalar
// and Keras write), assembled per the proto layout.
func tensorEvent(step int64, wall float64, tag string, v float32) []byte {
	var tensor []byte
	tensor = protowire.AppendTag(tensor, 1, protowire.VarintType) // dtype
	tensor = protowire.AppendVarint(tensor, 1)                    // DT_FLOAT
	tensor = protowire.AppendTag(tensor, 2, protowire.BytesType)  // tensor_shape {}
	tensor = protowire.AppendBytes(tensor, nil)
	tensor = protowire.AppendTag(tensor, 4, protowire.BytesType) // tensor_content
	tensor = protowire.AppendBytes(tensor, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
	var plugin []byte
	plugin = protowire.AppendTag(plugin, 1, protowire.BytesType)
	plugin = protowire.AppendString(plugin, "scalars")
	var meta []byte
	meta = protowire.AppendTag(meta, 1, protowire.BytesType)
	meta = protowire.AppendBytes(meta, plugin)
	var value []byte
	value = protowire.AppendTag(value, 1, protowire.BytesType)
	value = protowire.AppendString(value, tag)
	value = protowire.AppendTag(value, 9, protowire.BytesType)
	value = protowire.AppendBytes(value, meta)
	value = protowire.AppendTag(value, 8, protowire.BytesType)
	value = protowire.AppendBytes(value, tensor)
	var summary []byte
	summary = protowire.AppendTag(summary, 1, protowire.BytesType)
	summary = protowire.AppendBytes(summary, value)
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.Fixed64Type)
	e = protowire.AppendFixed64(e, math.Float64bits(wall))
	e = protowire.AppendTag(e, 2, protowire.VarintType)
	e = protowire.AppendVarint(e, uint64(step))
	e = protowire.AppendTag(e, 5, protowire.BytesType)
	return protowire.AppendBytes(e, summary)
}

// TestWatchTF2TensorSummaries: a Keras log directory (train/ with
// batch_loss and epoch_loss tensor summaries) is read without --map; the
// spike in batch_loss is raised, and epoch_loss keeps its own name.
func TestWatchTF2TensorSummaries(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "train"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := newCurve(12)
	var b []byte
	b = tfevents.AppendRecord(b, tfevents.Marshal(tfevents.Event{WallTime: 1.7e9, FileVersion: tfevents.FileVersion}))
	for s := int64(1); s <= 260; s++ {
		b = tfevents.AppendRecord(b, tensorEvent(s, 1.7e9+float64(s), "batch_loss", float32(lossAt(c, s))))
		b = tfevents.AppendRecord(b, tensorEvent(s, 1.7e9+float64(s), "epoch_learning_rate", 0.001))
	}
	b = tfevents.AppendRecord(b, tensorEvent(0, 1.7e9+300, "epoch_loss", 3.1))
	if err := os.WriteFile(filepath.Join(dir, "train", tfevents.FilePrefix+"1700000000.host.v2"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := DetectFormat(dir); err != nil || f != FormatTFEvents {
		t.Fatalf("format %q %v", f, err)
	}
	res, got, err := runWatch(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := rulesFired(got)[monitor.RuleLossSpike]; !ok || a.Step != spikeStep {
		t.Errorf("spike not raised: %v", res.Counts)
	}
	if res.Samples != 261 || strings.Join(res.Fields, ",") != "batch_loss,epoch_learning_rate,epoch_loss" {
		t.Errorf("report %+v", res.Report)
	}
}

// TestWatchNoLossIsAnError: a source without a recognisable loss is an
// error naming the fields it had, not an all-clear.
func TestWatchNoLossIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	writeLines(t, path, "", func(s int64, l float64) string {
		return fmt.Sprintf(`{"iter": %d, "objective": %.4f, "acc": 0.5}`+"\n", s, l)
	})
	res, _, err := runWatch(t, path)
	var nl *NoLossError
	if !errors.As(err, &nl) || !strings.Contains(err.Error(), "no loss metric recognised") || !strings.Contains(err.Error(), "acc, iter, objective") {
		t.Fatalf("error %v", err)
	}
	if res == nil || res.Samples != 260 {
		t.Errorf("result %+v", res)
	}
	// Named with --map, the same source is judged (and its spike found).
	var got []monitor.Alert
	if _, err := Run(context.Background(), path, testConfig(), RunOptions{Maps: []string{"train_loss_raw=objective"}}, func(a monitor.Alert) { got = append(got, a) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := rulesFired(got)[monitor.RuleLossSpike]; !ok {
		t.Error("mapped source: spike not raised")
	}
}

// endless is a reader of one good line, then bytes without a newline
// forever; it counts what was read.
type endless struct {
	head []byte
	n    int64
}

func (e *endless) Read(p []byte) (int, error) {
	k := copy(p, e.head)
	e.head = e.head[k:]
	for i := k; i < len(p); i++ {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestWatchOverlongLine: a line over MaxLineBytes is an error naming the
// line, after reading little more than the bound (not the 1 GB line).
func TestWatchOverlongLine(t *testing.T) {
	src := &endless{head: []byte(`{"step": 1, "train_loss_raw": 2}` + "\n")}
	r := &reader{m: newMapper(nil), fn: func(monitor.Sample) error { return nil }}
	err := r.readStream(context.Background(), "huge.jsonl", src, false, Options{})
	if err == nil || !strings.Contains(err.Error(), "huge.jsonl:2: line longer than 16 MiB") {
		t.Fatalf("error %v", err)
	}
	if src.n > MaxLineBytes+1<<20 {
		t.Errorf("read %d bytes for a bound of %d", src.n, MaxLineBytes)
	}
	if r.rep.Samples != 1 {
		t.Errorf("the line before it: %d samples", r.rep.Samples)
	}
}

// TestLineReaderFollow: an unterminated tail waits for the rest of its
// line (follow mode) and is read at the end otherwise.
func TestLineReaderFollow(t *testing.T) {
	pr, pw := io.Pipe()
	lr := newLineReader(pr)
	go func() {
		pw.Write([]byte("a\nb"))
		pw.Close()
	}()
	if l, err := lr.next(); err != nil || string(l) != "a" {
		t.Fatalf("%q %v", l, err)
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
	if l, ok := lr.rest(); !ok || string(l) != "b" || lr.n != 2 {
		t.Fatalf("rest %q %v %d", l, ok, lr.n)
	}
}
