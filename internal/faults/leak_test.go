package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

func TestLeakTiedToSteps(t *testing.T) {
	d := Default()
	d.LeakFromStep, d.LeakMBPerStep = 3, 0.5
	f := New(d, nil)
	for s, want := range map[int]int{1: 0, 2: 0, 3: 1 << 19, 4: 1 << 19} {
		if got := f.Leak(s); got != want {
			t.Errorf("step %d leaked %d bytes, want %d", s, got, want)
		}
	}
	if len(f.leaked) != 2 || f.leaked[1][4096] == 0 {
		t.Errorf("the leak is not kept or not touched: %d buffers", len(f.leaked))
	}
	off := New(Default(), nil)
	if got := off.Leak(5); got != 0 {
		t.Errorf("the default config leaked %d bytes", got)
	}
}

func TestCorruptCheckpointOneOff(t *testing.T) {
	d := Default()
	d.CorruptCheckpointAtStep = 8
	f := New(d, []runlog.Intervention{{ToStep: 4, FromStep: 10}}) // a rewind from 10 to 4: step 8 was trained
	if f.CorruptCheckpoint(8) {
		t.Error("a step the abandoned trajectory trained met the one-off fault again")
	}
	g := New(d, nil)
	if !g.CorruptCheckpoint(8) || g.CorruptCheckpoint(7) || g.CorruptCheckpoint(0) {
		t.Error("corrupt_checkpoint_at_step = 8 fires at 8 only")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "x")
	if err := os.WriteFile(p, []byte{1, 2, 3, 4}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := FlipByte(dir, "x"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); b[2] != 3^0xff || b[1] != 2 {
		t.Errorf("FlipByte: %v", b)
	}
	if err := FlipByte(dir, "missing"); err == nil || !strings.Contains(err.Error(), "corrupt_checkpoint_at_step") {
		t.Errorf("FlipByte of a missing file: %v", err)
	}
}

func TestValidateLeak(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.LeakMBPerStep = -1 }, "leak_mb_per_step"},
		{func(c *Config) { c.LeakMBPerStep = 2048 }, "leak_mb_per_step"},
		{func(c *Config) { c.LeakFromStep = -1 }, "leak_from_step"},
		{func(c *Config) { c.CorruptCheckpointAtStep = -3 }, "corrupt_checkpoint_at_step"},
	} {
		c := Default()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want an error naming %s", err, tc.want)
		}
	}
}
