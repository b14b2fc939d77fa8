package dashboard

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/dashboard/browsertest"
)

func TestBrowserPanels(t *testing.T) {
	browsertest.Chromium(t)
	if _, err := os.Stat("web/vendor/uPlot.iife.min.js"); err != nil {
		t.Fatal("web/vendor is empty: run `make build` (it installs uPlot with npm) before the browser test")
	}
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "runs", "alpha"), 3000, 30, 1500)
	srv, err := New(filepath.Join(root, "runs"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	shot := filepath.Join(t.TempDir(), "dash-synthetic.jpg")
	browsertest.Check(t, ts.URL+"/", shot, []string{"val", "train", "grad", "update", "lr", "tps", "steptime", "mfu", "maxlogit", "entropy", "maxlogitL-0", "resid"})
}
