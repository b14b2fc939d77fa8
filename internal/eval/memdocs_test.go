package eval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
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
