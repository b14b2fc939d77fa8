package branch

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kestrel-lm/kestrel/internal/compare"
	"github.com/kestrel-lm/kestrel/internal/dashboard"
	"github.com/kestrel-lm/kestrel/internal/dashboard/browsertest"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/testrun"
)

// TestDashboardCompare drives the dashboard in headless Chromium over a
// parent and a branch with a changed LR: the run page of the two runs
// shows the compare section with the verdict internal/compare gives and
// a row per metric; the screenshot of that section is docs/img/compare.png.
// To refresh the docs' screenshot from a real branch:
//
//	KESTREL_SCREENSHOT_BRANCH=$PWD/runs/canary-lr KESTREL_SCREENSHOT_DIR=$PWD/docs/img \
//	  go test -run DashboardCompare ./internal/branch
func TestDashboardCompare(t *testing.T) {
	bin := browsertest.Chromium(t)
	canary := os.Getenv("KESTREL_SCREENSHOT_BRANCH")
	var parent string
	if canary == "" {
		parent = parentRun(t)
		canary = filepath.Join(t.TempDir(), "canary")
		b, err := Prepare(Options{Parent: parent, From: "step-4", Out: canary, Steps: 8, Set: []string{"optim.lr=1e-2"}, Logger: testrun.Quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Train(context.Background(), b.Config, b.Dir, run.Options{Logger: testrun.Quiet()}); err != nil {
			t.Fatal(err)
		}
	} else {
		p, err := runlog.ReadBranch(canary)
		if err != nil || p == nil {
			t.Fatalf("KESTREL_SCREENSHOT_BRANCH=%s: %v (not a branch)", canary, err)
		}
		parent = p.Run
	}
	rep, err := compare.Compare([]string{canary}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := dashboard.New("", []string{parent, canary})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, 1800))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	url := ts.URL + "/#runs=" + filepath.Base(parent) + "," + filepath.Base(canary) + "&tab=run"
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(`#compare p.verdict`)); err != nil {
		t.Fatalf("browser: %s: %v", url, err)
	}
	verdict, err := chromedp.Run(ctx, chromedp.Text(`#compare p.verdict`))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#compare table.cmp')[0].rows.length - 1`))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(`#compare`, chromedp.NodeVisible))
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Pairs[0]
	want := len(p.Evals)
	if p.Train != nil {
		want++
	}
	if strings.TrimSpace(verdict) != p.Verdict || rows != want || rows < 2 {
		t.Errorf("compare section: verdict %q, %d metric rows; kestrel compare says %q with %d", verdict, rows, p.Verdict, want)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "compare.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv("KESTREL_SCREENSHOT_DIR"); d != "" {
		if err := os.WriteFile(filepath.Join(d, "compare.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
