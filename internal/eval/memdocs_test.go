package eval

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/openrun"
	"github.com/kestrel-lm/kestrel/internal/testrun"
)

// TestMemDocsTooShort: memorization's passages are prompt + continuation
// tokens (MemLengths: the context split in halves below seq_len 128, odd
// ones too). A dataset whose documents of a split are all shorter, or a
// byte-level text shorter than one passage, is an error naming the split
// and the lengths, not an empty result that reads as 0% memorized; a
// length every document has gives n passages of exactly that length.
func TestMemDocsTooShort(t *testing.T) {
	var docs []document.Doc
	for i := range 60 {
		docs = append(docs, document.Doc{ID: fmt.Sprint(i), Source: "web", Text: fmt.Sprintf("doc %d: a few short words here.", i)})
	}
	sd, err := shards.Open(testrun.Dataset(t, docs, 300))
	if err != nil {
		t.Fatal(err)
	}
	d := &runData{&openrun.Data{Dataset: sd}}
	pre, cont := MemLengths(65) // odd: 32 + 33
	for _, split := range []string{shards.Train, shards.Val} {
		_, err := d.memDocs(split, 5, pre+cont)
		if err == nil || !strings.Contains(err.Error(), "dataset's "+split+" split") || !strings.Contains(err.Error(), "65 tokens") ||
			!strings.Contains(err.Error(), "its longest has") {
			t.Errorf("%s: err %v, want one naming the split and the lengths", split, err)
		}
		got, err := d.memDocs(split, 3, 3)
		if err != nil || len(got) != 3 || len(got[0]) != 3 {
			t.Errorf("%s: 3 passages of 3 tokens: %d, err %v", split, len(got), err)
		}
	}
	b := &runData{&openrun.Data{Train: []byte(strings.Repeat("x", 100)), Val: []byte("short")}}
	if _, err := b.memDocs(shards.Val, 5, pre+cont); err == nil || !strings.Contains(err.Error(), "val text has 5 bytes") ||
		!strings.Contains(err.Error(), "65") {
		t.Errorf("byte-level val: err %v", err)
	}
	if got, err := b.memDocs(shards.Train, 5, pre+cont); err != nil || len(got) != 5 || len(got[4]) != 65 {
		t.Errorf("byte-level train: %d passages, err %v", len(got), err)
	}
}

// TestInLoopMemorizationTooShort: in training, a dataset whose documents
// are all shorter than memorization's passage leaves the task out with a
// warning naming the split and the lengths (kestrel eval refuses it), so
// the run goes on instead of stopping at its first benchmark; the other
// tasks still run.
func TestInLoopMemorizationTooShort(t *testing.T) {
	var docs []document.Doc
	for i := range 60 {
		docs = append(docs, document.Doc{ID: fmt.Sprint(i), Source: "web", Text: fmt.Sprintf("doc %d: a few short words here.", i)})
	}
	ds := testrun.Dataset(t, docs, 300)
	m, err := model.New(model.Config{Vocab: 300, DModel: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 64,
		RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	fn, err := InLoop(t.TempDir(), ds, evalcfg.Config{Tasks: []string{"memorization", "bpb-val"}, Limit: 2}, 2, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for step := range 2 {
		vals, err := fn(context.Background(), m, 10*(step+1))
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for k := range vals {
			if strings.Contains(k, "mem") {
				t.Errorf("step %d: memorization metric %s", step, k)
			}
		}
		if len(vals) == 0 {
			t.Errorf("step %d: no bpb-val", step)
		}
	}
	if w := logs.String(); strings.Count(w, "memorization is left out") != 1 || !strings.Contains(w, "train split has 64 tokens") {
		t.Errorf("warnings:\n%s", w)
	}
}
