package replay

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/rewind"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/run"
)

// TestReplayAfterRewind: a run rewound to step 3 skipping the batches of
// steps 4–5 and trained on to step 8: the replay of each step after the
// skip rebuilds the batch the trainer trained on (data step s+2), so its
// loss and gradient norm are the logged ones bit for bit and its rows name
// the documents of data step s+2, not those of data step s; --decode gives
// every row's text.
func TestReplayAfterRewind(t *testing.T) {
	cfg, dir := smallRunSteps(t, 8)
	iv, err := rewind.Rewind(dir, rewind.Options{To: "3", SkipFrom: 4, SkipTo: 5, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if iv.ToStep != 3 || iv.SkipSteps != 2 {
		t.Fatalf("intervention %+v", iv)
	}
	if _, err := run.Train(context.Background(), cfg, dir, run.Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	l, err := run.OpenLoader(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for s := 4; s <= 8; s++ {
		res, err := Replay(dir, Options{From: s, To: s})
		if err != nil {
			t.Fatal(err)
		}
		st := res.Steps[0]
		if res.CkptStep != s-1 || len(res.Warnings) != 0 {
			t.Errorf("step %d: checkpoint of step %d, warnings %q", s, res.CkptStep, res.Warnings)
		}
		if st.DataStep != s+2 {
			t.Errorf("step %d: data step %d, want %d", s, st.DataStep, s+2)
		}
		if st.Loss != st.LoggedLoss || st.GradNorm != st.LoggedGradNorm {
			t.Errorf("step %d: replayed loss %v grad norm %v, the trainer logged %v %v: not the batch it trained on", s, st.Loss, st.GradNorm, st.LoggedLoss, st.LoggedGradNorm)
		}
		trained, err := l.BatchInfo(s + 1) // 0-based index of data step s+2
		if err != nil {
			t.Fatal(err)
		}
		unskipped, err := l.BatchInfo(s - 1)
		if err != nil {
			t.Fatal(err)
		}
		got, want, old := docIDs(st.Rows), docIDsOf(trained), docIDsOf(unskipped)
		if got != want {
			t.Errorf("step %d: replay names documents %s, the trainer trained on %s", s, got, want)
		}
		if want == old {
			t.Fatalf("step %d: data steps %d and %d hold the same documents: the test proves nothing", s, s+2, s)
		}
	}

	// --decode: every row's text, the documents' text.
	res, err := Replay(dir, Options{From: 6, To: 6, Decode: true})
	if err != nil {
		t.Fatal(err)
	}
	path, err := datadir.Expand("${KESTREL_DATA}/tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps[0].Rows) != 4 {
		t.Fatalf("--decode: %d rows, want 4", len(res.Steps[0].Rows))
	}
	for _, row := range res.Steps[0].Rows {
		if row.Text == nil || len(*row.Text) < 32 {
			t.Fatalf("--decode: row %d text %v", row.Row, row.Text)
		}
		longest := ""
		for _, part := range strings.Split(*row.Text, "<|endoftext|>") {
			if len(part) > len(longest) {
				longest = part
			}
		}
		if !bytes.Contains(raw, []byte(longest)) {
			t.Errorf("--decode: row %d text %q is not Tiny Shakespeare's", row.Row, longest)
		}
	}
	// Step 6 after the rewind reads the batch of data step 8 (the table
	// kestrel replay prints of it: cmd/kestrel/internal/show).
	if res.Steps[0].DataStep != 8 {
		t.Errorf("step %d reads data step %d, want 8", res.Steps[0].Step, res.Steps[0].DataStep)
	}
}

func docIDs(rows []Row) string {
	var b strings.Builder
	for _, r := range rows {
		for _, d := range r.Docs {
			b.WriteString(d.ID + " ")
		}
		b.WriteString("| ")
	}
	return b.String()
}

func docIDsOf(info loader.BatchInfo) string { return docIDs(rowsOf(info)) }
