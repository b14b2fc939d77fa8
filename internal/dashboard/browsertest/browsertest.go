// Package browsertest drives the dashboard in headless Chromium (Debian's
// chromium package) for tests: load the page, check every panel drew its
// data, switch the x-axis and take a screenshot.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of a Chromium to drive, or skips the test when
// none is installed — unless KESTREL_REQUIRE_BROWSER=1 (CI sets it), where a
// missing browser is a failure.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("KESTREL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("KESTREL_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium found (install Debian's chromium package; .ci/run does)")
	}
	t.Skip("no chromium found; set KESTREL_REQUIRE_BROWSER=1 to make this a failure")
	return ""
}

// Check loads the dashboard at url in headless Chromium, checks that
// every panel with data drew a chart, switches the x-axis to tokens and
// saves a screenshot to shot (PNG when shot ends in .png, else JPEG). It
// returns the panels that rendered.
func Check(t testing.TB, url, shot string, wantPanels []string) []string {
	t.Helper()
	bin := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 2400),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(`.panel canvas`),
		chromedp.Sleep(300*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("browser: load %s: %v", url, err)
	}
	rendered, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.panel')].filter(p => p.querySelector('canvas') && +p.dataset.points > 0).map(p => p.dataset.panel)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range wantPanels {
		if !slices.Contains(rendered, want) {
			t.Errorf("panel %q did not render with data (rendered: %v)", want, rendered)
		}
	}
	empty, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.panel:not(.nodata)')].filter(p => !p.querySelector('canvas')).map(p => p.dataset.panel)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(empty) > 0 {
		t.Errorf("panels without a chart: %v", empty)
	}
	err = chromedp.Do(ctx, chromedp.Click(`input[name=x][value=tokens]`))
	if err == nil {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](`location.hash.includes('x=tokens') && !!document.querySelector('.panel .u-legend .u-series th') && document.querySelector('.panel .u-legend .u-series th').textContent.includes('tokens')`, chromedp.WithPollingTimeout(20*time.Second)))
	}
	if err != nil {
		t.Fatalf("switching the x-axis to tokens: %v", err)
	}
	xLabel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.panel .u-legend .u-series th').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(xLabel, "tokens") {
		t.Errorf("x-axis label after switching: %q", xLabel)
	}
	// Chromium writes PNG at quality 100 and JPEG below it.
	quality := 80
	if strings.HasSuffix(shot, ".png") {
		quality = 100
	}
	img, err := chromedp.Run(ctx, chromedp.FullScreenshot(quality))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, img, 0o644); err != nil {
		t.Fatal(err)
	}
	// KESTREL_SCREENSHOT_DIR keeps a copy beyond the test's temp dir.
	if d := os.Getenv("KESTREL_SCREENSHOT_DIR"); d != "" {
		if err := os.WriteFile(filepath.Join(d, filepath.Base(shot)), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return rendered
}
