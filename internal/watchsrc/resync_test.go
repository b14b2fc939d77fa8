package watchsrc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/tfevents"
	"github.com/kestrel-lm/kestrel/monitor"
)

// TestTFEventsBadCRCMidFile: a bad CRC in the middle of one event file
// costs that record only — the file's later records are read — and the
// watch reports itself incomplete: the summary says so on its first line
// and the exit is non-zero unless --allow-bad (before: the rest of the
// file was dropped, "1 bad record skipped", 0 SEV0/SEV1 and exit 0).
func TestTFEventsBadCRCMidFile(t *testing.T) {
	var b []byte
	var offs []int
	for s := int64(1); s <= 100; s++ {
		offs = append(offs, len(b))
		e := tfevents.Event{Step: s, WallTime: 1.7e9 + float64(s), Scalars: []tfevents.Scalar{{Tag: "loss", Value: float32(3 + 1/float64(s))}}}
		b = tfevents.AppendRecord(b, tfevents.Marshal(e))
	}
	b[offs[40]+14] ^= 0xff // record of step 41: its data CRC fails
	b[offs[70]] ^= 0x01    // record of step 71: its length CRC fails
	path := filepath.Join(t.TempDir(), tfevents.FilePrefix+"1700000000.host")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), path, testConfig(), RunOptions{Logger: quietLogger()}, func(monitor.Alert) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 98 || res.BadLines != 2 || res.BadBytes != int64(offs[41]-offs[40]+offs[71]-offs[70]) {
		t.Errorf("samples %d, bad %d (%d bytes); want 98 samples read, 2 bad records", res.Samples, res.BadLines, res.BadBytes)
	}
	if !strings.Contains(res.FirstBad, path+": byte "+strconv.Itoa(offs[40])) {
		t.Errorf("first bad %q; want it to name the file and byte %d", res.FirstBad, offs[40])
	}
	// The summary kestrel watch prints of such a result (INCOMPLETE on its
	// first line) is tested with the printer, cmd/kestrel/internal/show.
	if err := res.Exit(false, false); err == nil || !strings.Contains(err.Error(), "--allow-bad") {
		t.Errorf("exit: %v; want a non-zero exit naming --allow-bad", err)
	}
	if err := res.Exit(false, true); err != nil {
		t.Errorf("exit with --allow-bad: %v", err)
	}
}

// TestReadEndsAtCancel: a read of a long file of bad lines (no sample to
// stop at) ends when its context is cancelled, reading nothing more.
func TestReadEndsAtCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("{not json\n"), 200_000), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, path, testConfig(), RunOptions{Logger: quietLogger()}, func(monitor.Alert) {})
	if res == nil || res.BadLines != 0 {
		t.Fatalf("a cancelled read went on: %+v, %v", res, err)
	}
}
