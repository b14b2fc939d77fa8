package run

import (
	"fmt"
	"io"
	"os"

	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// Opening is the one opening ritual of a run directory (issue 37), for a
// single process's attempts, rank 0 of a data-parallel start and a
// branch: Check, the output rule, before anything reads or creates files
// in the directory; Options, the trainer's options (interventions
// applied, data opened); train.Preflight on them before anything is
// written (its error prefixed by PreflightContext when set); then Lock,
// the directory's lock. On an error the options' data source is closed;
// on success the caller owns it.
type Opening struct {
	Check            func() error
	Options          func() (train.Options, error)
	PreflightContext string
	Lock             func(train.Options) error
}

// Open carries out the ritual.
func (o Opening) Open() (train.Options, error) {
	if err := o.Check(); err != nil {
		return train.Options{}, err
	}
	to, err := o.Options()
	if err != nil {
		return to, err
	}
	err = train.Preflight(to)
	if err != nil && o.PreflightContext != "" {
		err = fmt.Errorf("%s: %w", o.PreflightContext, err)
	}
	if err == nil {
		err = o.Lock(to)
	}
	if err != nil {
		if c, ok := to.Data.(io.Closer); ok {
			_ = c.Close()
		}
		return train.Options{}, err
	}
	return to, nil
}

// openDir is the Opening of a training run: the output rule (CheckRunDir,
// --fresh) on the first opening only; then, after the preflight, the
// directory is made and locked (once: the lock is held in st across
// automatic rollbacks).
func (st *attemptState) openDir(dir string, fresh bool, options func() (train.Options, error)) (train.Options, error) {
	return Opening{
		Check: func() error {
			if st.lk != nil {
				return nil
			}
			if err := CheckRunDir(dir, fresh); err != nil {
				return fmt.Errorf("train: %w", err)
			}
			return nil
		},
		Options: options,
		Lock:    func(to train.Options) error { return st.lock(dir, to) },
	}.Open()
}

// lock makes dir and takes its lock unless st holds it.
func (st *attemptState) lock(dir string, to train.Options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if st.lk != nil {
		return nil
	}
	lk, err := runlock.Acquire(dir, to.Logger)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	st.lk, st.log = lk, to.Logger
	return nil
}
