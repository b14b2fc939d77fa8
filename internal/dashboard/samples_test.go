package dashboard

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kestrel-lm/kestrel/internal/dashboard/browsertest"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// writeSamples records generations of prompts at steps; the greedy text
// of prompt 0 stays the same from the second checkpoint on.
func writeSamples(t *testing.T, dir string, steps []int, prompts []string) {
	t.Helper()
	texts := []string{"\nThe king is not the king of the world,\nAnd the world", "\nKING RICHARD II:\nWhat says the king?", "\nFirst Citizen:\nWe are accounted poor citizens"}
	for i, st := range steps {
		var gs []runlog.Generation
		for j, p := range prompts {
			greedy := texts[(i+j)%len(texts)]
			if j == 0 && i > 0 {
				greedy = texts[1]
			}
			for _, m := range []struct {
				mode, text string
				temp       float64
			}{{runlog.ModeGreedy, greedy, 0}, {runlog.ModeSampled, strings.ToUpper(texts[(i+j+1)%len(texts)]), 0.8}} {
				gs = append(gs, runlog.Generation{Step: st, TokensSeen: int64(st) * 768, Checkpoint: "checkpoints/x", Weights: "raw", Prompt: p,
					Mode: m.mode, Temperature: m.temp, TopK: 40 * int(m.temp/0.8), Seed: 1, Tokens: 60, Text: m.text})
			}
		}
		if err := runlog.AppendGenerations(dir, gs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSamplesAPI: /api/samples returns a run's generations in file order,
// counts bad lines, answers an empty list for a run without samples, and
// refuses a samples.jsonl that is not a regular file or an unknown run.
func TestSamplesAPI(t *testing.T) {
	ts, root := newTestServer(t)
	alpha, beta := filepath.Join(root, "runs", "alpha"), filepath.Join(root, "runs", "beta")
	writeSamples(t, alpha, []int{100, 200}, []string{"ROMEO:", ""})
	f, err := os.OpenFile(filepath.Join(alpha, runlog.SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"step":300,"mode":"beam"}` + "\n")
	f.Close()
	var got Samples
	if err := json.Unmarshal(get(t, ts.URL+"/api/samples?run=alpha", 200), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Generations) != 8 || got.Generations[0].Step != 100 || got.Generations[7].Step != 200 || got.Generations[1].Mode != runlog.ModeSampled || got.Skipped != 1 || !strings.Contains(got.FirstBad, "samples.jsonl:9") {
		t.Fatalf("alpha: %d generations, skipped %d (%s)", len(got.Generations), got.Skipped, got.FirstBad)
	}
	if b := get(t, ts.URL+"/api/samples?run=beta", 200); !strings.Contains(string(b), `"generations":[]`) {
		t.Errorf("a run without samples: %s", b)
	}
	if err := os.Mkdir(filepath.Join(beta, runlog.SamplesFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if b := get(t, ts.URL+"/api/samples?run=beta", 500); !strings.Contains(string(b), "samples.jsonl") {
		t.Errorf("a directory named samples.jsonl: %s", b)
	}
	get(t, ts.URL+"/api/samples?run=nope", 404)
}

// TestBrowserSamplesTable loads the run page in headless Chromium: the
// samples table has a row per checkpoint and a column per prompt, marks
// a greedy text that did not change, and shows text as text (no markup).
// It saves a screenshot of the table (samples.png under
// KESTREL_SCREENSHOT_DIR when set); KESTREL_SCREENSHOT_RUN names a real
// run to show instead of the synthetic one (docs/img/samples.png):
//
//	KESTREL_SCREENSHOT_RUN=$PWD/runs/shakespeare-char KESTREL_SCREENSHOT_DIR=$PWD/docs/img \
//	  go test -run BrowserSamplesTable ./internal/dashboard
func TestBrowserSamplesTable(t *testing.T) {
	bin := browsertest.Chromium(t)
	dir, steps, prompts := os.Getenv("KESTREL_SCREENSHOT_RUN"), 0, 0
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "runs", "alpha")
		writeRun(t, dir, 300, 10, 150)
		writeSamples(t, dir, []int{100, 200, 300}, []string{"ROMEO:", "<b>x</b>"})
		steps, prompts = 3, 2
	}
	name := filepath.Base(dir)
	srv, err := New("", []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1200))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	sel := "#samples-" + name
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/#tab=run&runs="+name), chromedp.WaitVisible(sel+" table.samples td")); err != nil {
		t.Fatalf("browser: the samples table of %s did not show: %v", name, err)
	}
	count := func(js string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := count(`document.querySelectorAll('` + sel + ` table.samples tr').length`)
	cols := count(`document.querySelectorAll('` + sel + ` table.samples th').length`)
	same := count(`[...document.querySelectorAll('` + sel + ` .note')].filter(n => n.textContent.includes('same as above')).length`)
	bold := count(`document.querySelectorAll('` + sel + ` table.samples td b b').length`)
	img, err := chromedp.Run(ctx, chromedp.Screenshot(sel, chromedp.NodeVisible))
	if err != nil {
		t.Fatal(err)
	}
	if steps > 0 && (rows != steps+1 || cols != prompts+1 || same != steps-2 || bold != 0) {
		t.Errorf("table: %d rows, %d columns, %d unchanged greedy texts, %d injected <b>; want %d, %d, %d, 0", rows, cols, same, bold, steps+1, prompts+1, steps-2)
	}
	if len(img) < 1000 {
		t.Fatalf("screenshot of %d bytes", len(img))
	}
	out := filepath.Join(t.TempDir(), "samples.png")
	if d := os.Getenv("KESTREL_SCREENSHOT_DIR"); d != "" {
		out = filepath.Join(d, "samples.png")
	}
	if err := os.WriteFile(out, img, 0o644); err != nil {
		t.Fatal(err)
	}
}
