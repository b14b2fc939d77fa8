// Package flagx is kestrel's flag glue: the parsing of flag values that
// are more than a type (a range of steps, a held-out set NAME=PATH) and
// the end of a command's part in a process group, kept beside the
// commands rather than in the libraries they call.
package flagx

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/evalcfg"
	"github.com/kestrel-lm/kestrel/internal/rewind"
)

// DataPaths returns paths given on the command line with ${KESTREL_DATA}
// expanded (datadir.Expand): the command side's one resolution of the
// placeholder, as config.Resolve is a config's; the libraries take
// resolved paths.
func DataPaths(paths ...string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		e, err := datadir.Expand(p)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// DataPath is DataPaths for one path.
func DataPath(p string) (string, error) { return datadir.Expand(p) }

// StepRange parses a range of training steps given to flag as "A:B"
// (inclusive) or "A" (one step); "" is no range (0, 0). The error names the
// flag.
func StepRange(flag, s string) (from, to int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		b = a
	}
	if from, err = strconv.Atoi(strings.TrimSpace(a)); err == nil {
		to, err = strconv.Atoi(strings.TrimSpace(b))
	}
	if err != nil || from < 1 || to < from || to > rewind.MaxSkipStep {
		return 0, 0, fmt.Errorf("%s %q: want A:B with 1 ≤ A ≤ B ≤ %d (training steps, inclusive)", flag, s, rewind.MaxSkipStep)
	}
	return from, to, nil
}

// EndRank ends this process's part of the group c after training returned
// err: a rank whose collective timed out (comm.HangError; rank 0 has
// written the SEV0 rank_hang) prints err and aborts the whole job, so the
// hung rank does not linger; otherwise it finalizes and returns err.
func EndRank(c comm.Comm, err error, stderr io.Writer) error {
	var he *comm.HangError
	if c.Size() > 1 && errors.As(err, &he) {
		fmt.Fprintln(stderr, "kestrel:", err)
		c.Abort(3)
	}
	if cerr := c.Close(); cerr != nil && err == nil {
		return cerr
	}
	return err
}

// Heldout reads kestrel eval's --heldout NAME=PATH. The name follows
// the [eval] heldout rules (letters, digits, '_', '-', '.'); the path may
// hold '=' and ${KESTREL_DATA}.
func Heldout(s string) (evalcfg.HeldoutSet, error) {
	name, path, ok := strings.Cut(s, "=")
	h := evalcfg.HeldoutSet{Name: name, Path: path}
	if !ok {
		return h, fmt.Errorf("--heldout %q: want NAME=PATH", s)
	}
	if err := (evalcfg.Config{Heldout: []evalcfg.HeldoutSet{h}}).Validate(0); err != nil {
		return h, fmt.Errorf("--heldout %q: %w", s, err)
	}
	p, err := DataPath(h.Path)
	if err != nil {
		return h, fmt.Errorf("--heldout %q: %w", s, err)
	}
	h.Path = p
	return h, nil
}
