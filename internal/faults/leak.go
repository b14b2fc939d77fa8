package faults

import (
	"fmt"
	"os"
	"path/filepath"
)

// Leak allocates the [debug] leak of step s: leak_mb_per_step MiB from
// leak_from_step on, every page written (so that it is resident, not a
// zero page the kernel never backs) and kept until the Set is dropped.
// It returns the bytes allocated (0 when the step leaks nothing).
func (f *Set) Leak(s int) int {
	d := f.d
	if d.LeakFromStep <= 0 || s < d.LeakFromStep || d.LeakMBPerStep <= 0 {
		return 0
	}
	b := make([]byte, int(d.LeakMBPerStep*(1<<20)))
	for i := 0; i < len(b); i += 4096 {
		b[i] = byte(s) | 1
	}
	f.leaked = append(f.leaked, b)
	return len(b)
}

// CorruptCheckpoint reports whether the checkpoint of step s gets one
// byte flipped after it was installed (corrupt_checkpoint_at_step): a
// one-off, like a bit flipped on the way to the disk.
func (f *Set) CorruptCheckpoint(s int) bool {
	return s > 0 && s == f.d.CorruptCheckpointAtStep && f.firstPass(s)
}

// FlipByte flips every bit of the byte in the middle of the file name in
// the checkpoint directory dir, in place.
func FlipByte(dir, name string) error {
	p := filepath.Join(dir, name)
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("debug.corrupt_checkpoint_at_step: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || st.Size() == 0 {
		return fmt.Errorf("debug.corrupt_checkpoint_at_step: %s: empty or unreadable (%v)", p, err)
	}
	off := st.Size() / 2
	var b [1]byte
	if _, err := fh.ReadAt(b[:], off); err != nil {
		return fmt.Errorf("debug.corrupt_checkpoint_at_step: %s: %w", p, err)
	}
	b[0] ^= 0xff
	if _, err := fh.WriteAt(b[:], off); err != nil {
		return fmt.Errorf("debug.corrupt_checkpoint_at_step: %s: %w", p, err)
	}
	return fh.Close()
}
