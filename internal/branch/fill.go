package branch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// wholeFiles are the parent's files a branch copies as they are: the
// frozen probe batch (so fixed_probe_loss compares), the interventions
// that shaped the checkpoint's trajectory (its data offset and LR scale;
// the trainer checks the checkpoint against them), the incidents a person
// closed, and the dataset report.
var wholeFiles = []string{train.ProbeFile, runlog.InterventionsFile, runlog.IncidentClosuresFile, run.DataReportFile}

// fill writes the branch's files into the temporary directory tmp.
func (b *Branch) fill(tmp string) error {
	if err := config.WriteFile(rundir.Of(tmp).Config(), b.Config); err != nil {
		return err
	}
	ck := filepath.Join(rundir.Of(tmp).Checkpoints(), filepath.Base(b.Parent.Checkpoint))
	if err := copyDir(b.Parent.Checkpoint, ck); err != nil {
		return err
	}
	// The copy is the checkpoint the parent recorded: every file against
	// SHA256SUMS, and SHA256SUMS itself against the digest in branch.json
	// (a keep policy deleting it mid-copy is caught here).
	if err := checkpoint.Verify(ck); err != nil {
		return fmt.Errorf("the copy of %s: %w", b.Parent.Checkpoint, err)
	}
	if h, err := runlog.HashFile(filepath.Join(ck, checkpoint.SumsFile)); err != nil || h != b.Parent.SumsSHA256 {
		return fmt.Errorf("the copy of %s: %s changed while it was copied (%v); branch again", b.Parent.Checkpoint, checkpoint.SumsFile, err)
	}
	for _, n := range wholeFiles {
		if err := copyFile(filepath.Join(b.Parent.Run, n), filepath.Join(tmp, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, n := range []string{rundir.MetricsName, rundir.AlertsName, runlog.SamplesFile} {
		if err := copyUpTo(filepath.Join(b.Parent.Run, n), filepath.Join(tmp, n), b.Parent.Step); err != nil {
			return err
		}
	}
	return runlog.WriteBranch(tmp, &b.Parent)
}

// copyDir copies the regular files of the checkpoint directory src into
// dst (a checkpoint holds no subdirectories; anything else is refused).
func copyDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s: %s is not a regular file; a checkpoint holds only files", src, e.Name())
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the regular file src to dst (fs.ErrNotExist when src
// is absent).
func copyFile(src, dst string) error {
	in, err := fileguard.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// copyUpTo copies the JSON lines of src whose "step" is at most step (the
// parent's history up to the branch point, so the branch's curves, the
// monitor's windows, the checkpoint health and the samples table read as
// the parent's did).
// A line without a step, or one that does not parse, is left out; an
// absent src is no file.
func copyUpTo(src, dst string, step int) error {
	in, err := fileguard.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	rec := runlog.NewRecord()
	_, err = runlog.EachLine(in, func(line []byte) { // a half-written last line, or one over 16 MiB, is left out
		if runlog.ParseLine(bytes.TrimSpace(line), rec) == nil {
			if s, ok := rec.Num("step"); ok && s <= float64(step) {
				bw.Write(line) // its error stays in bw, returned by Flush
			}
		}
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
