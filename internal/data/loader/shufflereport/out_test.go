//go:build unix

package shufflereport

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

// TestReportOutRule: --out replaces only a plot this command wrote (or
// any regular file with --overwrite); a user's PNG or text, a link, a FIFO,
// the config file and a path inside the dataset are refused naming the
// path, before anything is measured, and the file is left as it was. The
// old command replaced whatever --out named.
func TestReportOutRule(t *testing.T) {
	dir := t.TempDir()
	opt := Options{Permutations: []string{"feistel"}, Steps: 50, Batch: 8, Blocks: 4, Lags: 5, Items: 5000, Data: loader.DefaultConfig(), RunSeed: 1}
	comps, labels, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	ours := filepath.Join(dir, "ours.png")
	if err := Plot(ours, comps, labels); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(ours); err != nil {
		t.Fatal(err)
	} else if _, err := png.Decode(bytes.NewReader(b)); err != nil || !WrotePlot(ours) {
		t.Fatalf("the marked plot is no valid PNG (%v) or is not recognised (%v)", err, WrotePlot(ours))
	}
	userPNG := filepath.Join(dir, "holiday.png")
	var pb bytes.Buffer
	png.Encode(&pb, image.NewGray(image.Rect(0, 0, 4, 4)))
	os.WriteFile(userPNG, pb.Bytes(), 0o644)
	userTxt := filepath.Join(dir, "thesis.tex")
	os.WriteFile(userTxt, []byte("mine"), 0o644)
	link := filepath.Join(dir, "link.png")
	os.Symlink(ours, link)
	fifo := filepath.Join(dir, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "run.toml")
	os.WriteFile(cfgFile, []byte("[run]\n"), 0o644)
	dataset := filepath.Join(dir, "ds")
	os.Mkdir(dataset, 0o755)

	tests := []struct {
		name, out string
		overwrite bool
		want      string // "" = written
	}{
		{"new file", filepath.Join(dir, "new.png"), false, ""},
		{"an earlier plot", ours, false, ""},
		{"a user's PNG", userPNG, false, "is not a shuffle-report plot kestrel wrote; choose another path, or pass --overwrite"},
		{"a user's PNG, --overwrite", userPNG, true, ""},
		{"a user's text", userTxt, false, "pass --overwrite"},
		{"a link to a plot", link, true, "is a symbolic link"},
		{"a FIFO", fifo, true, "named pipe (FIFO)"},
		{"the config file", cfgFile, true, "is an input of this command"},
		{"inside the dataset", filepath.Join(dataset, "r.png"), true, "is inside " + dataset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if tc.name != "a FIFO" {
				before, _ = os.ReadFile(tc.out)
			}
			o := opt
			o.Out, o.Overwrite, o.Inputs = tc.out, tc.overwrite, []string{cfgFile, dataset}
			res, err := Report(o)
			if tc.want == "" {
				if err != nil || !WrotePlot(tc.out) || res.Plot != tc.out {
					t.Fatalf("not written: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.out) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want %q naming %s", err, tc.want, tc.out)
			}
			if res != nil {
				t.Errorf("measured before refusing: %+v", res)
			}
			if tc.name != "a FIFO" {
				if after, _ := os.ReadFile(tc.out); !bytes.Equal(before, after) {
					t.Errorf("%s changed", tc.out)
				}
			}
		})
	}
}
