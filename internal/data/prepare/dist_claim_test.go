package prepare

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// TestClaimOrder: a rank tries its own units first, in order, then the
// other ranks' from the back of their lists.
func TestClaimOrder(t *testing.T) {
	for _, tc := range []struct {
		owner      []int
		size, rank int
		want       []int
	}{
		{[]int{0, 1, 0, 1, 0, 1}, 2, 0, []int{0, 2, 4, 5, 3, 1}},
		{[]int{0, 1, 0, 1, 0, 1}, 2, 1, []int{1, 3, 5, 4, 2, 0}},
		{[]int{0, 1, 2, 0, 1}, 3, 0, []int{0, 3, 4, 1, 2}},
		{[]int{0, 1, 2, 0, 1}, 3, 2, []int{2, 3, 4, 0, 1}},
		{[]int{0, 0, 0}, 2, 1, []int{2, 1, 0}}, // nothing of its own
		{nil, 2, 0, nil},
	} {
		got := claimOrder(tc.owner, tc.size, tc.rank)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("claimOrder(%v, %d, %d) = %v, want %v", tc.owner, tc.size, tc.rank, got, tc.want)
		}
		s := slices.Sorted(slices.Values(got))
		for i, u := range s {
			if u != i {
				t.Errorf("claimOrder(%v, %d, %d) = %v: not every unit once", tc.owner, tc.size, tc.rank, got)
				break
			}
		}
	}
}

// TestDistSlowRankLeavesItsUnits: a rank that starts phase 1 only after
// the other has finished gets no unit (the other claimed all of them,
// its own and the slow rank's) and the dataset is still one process's.
func TestDistSlowRankLeavesItsUnits(t *testing.T) {
	cfg := distConfig(t)
	cfg.Tokenizer.Mode = "none"
	single := filepath.Join(t.TempDir(), "single")
	if _, err := Run(context.Background(), cfg, RunOptions{Out: single}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dist")
	rank0Done := make(chan struct{})
	reps, errs := runLocal(t, 2, cfg, out, func(r int, o *DistOptions) {
		if r == 0 {
			o.hooks = &distHooks{afterClaims: func() { close(rank0Done) }}
		} else {
			o.hooks = &distHooks{beforeClaims: func() { <-rank0Done }}
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	d := reps[0].Dist
	if d.PerRank[0].Units != d.Units || d.PerRank[1].Units != 0 || d.PerRank[1].Docs != 0 {
		t.Errorf("rank 0 took %d of %d units, rank 1 %d (%d documents); want all on rank 0", d.PerRank[0].Units, d.Units, d.PerRank[1].Units, d.PerRank[1].Docs)
	}
	diffs, err := Diff(single, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range diffs {
		t.Error(s)
	}
}

// TestSpillRoundTrip: a document comes back from the spill as from a JSON
// line: invalid UTF-8 bytes turned into U+FFFD one by one, meta numbers as
// float64, empty meta as none.
func TestSpillRoundTrip(t *testing.T) {
	docs := []document.Doc{
		{ID: "web:a.jsonl:1", Source: "web", Text: "plain text\nwith lines"},
		{ID: "web:a.jsonl:2", Source: "web", Text: "bad \xff\xfe bytes and a cut rune \xe2\x82", Meta: map[string]any{"url": "http://x/\xff", "n": 3, "nested": map[string]any{"k": []any{1, "a"}}}},
		{ID: "", Source: "web", Text: "", Meta: map[string]any{}},
		{ID: "web:a.jsonl:4", Source: "web", Text: "<html> & \u2028 \x00 \"quoted\""},
	}
	dir := t.TempDir()
	w, err := createSpill(filepath.Join(dir, "s.bin"))
	if err != nil {
		t.Fatal(err)
	}
	zw, err := createZstdJSONL(filepath.Join(dir, "s.jsonl.zst"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := w.write(d); err != nil {
			t.Fatal(err)
		}
		if err := zw.write(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.close(); err != nil {
		t.Fatal(err)
	}
	var got, want []document.Doc
	for d, err := range readSpill(filepath.Join(dir, "s.bin")) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	for d, err := range ReadDocs([]string{filepath.Join(dir, "s.jsonl.zst")}) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spill gives\n%#v\nJSON lines give\n%#v", got, want)
	}
	if len(got) != len(docs) || got[1].Text == docs[1].Text {
		t.Errorf("round trip kept invalid UTF-8 or lost documents: %#v", got)
	}
}

// TestSpillRejectsBadFiles: a file that is not a spill, or is cut short,
// is an error naming the file and record.
func TestSpillRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := createSpill(filepath.Join(dir, "s.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := w.write(document.Doc{ID: "x", Source: "web", Text: "some text"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(filepath.Join(dir, "s.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not a spill", []byte("{\"id\": 1}\n"), "not a spill file"},
		{"cut short", full[:len(full)-4], "record 3: text"},
	} {
		p := filepath.Join(dir, "bad.bin")
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		n := 0
		for _, e := range readSpill(p) {
			if e != nil {
				err = e
				break
			}
			n++
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %d documents, error %v; want one naming %s and %q", tc.name, n, err, p, tc.want)
		}
	}
}
