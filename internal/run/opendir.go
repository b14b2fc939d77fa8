package run

import (
	"fmt"
	"io"
	"os"

	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// openDir is the one opening ritual of a run directory, for a single
// process's attempts and for rank 0 of a data-parallel start: the output
// rule (CheckRunDir, --fresh) on the first opening, before anything reads
// or creates files in dir; then options builds the trainer's options
// (interventions applied, data opened); train.Preflight checks them before
// anything is written; then the directory is made and locked (once: the
// lock is held in st across automatic rollbacks). On an error the options'
// data source is closed; on success the caller owns it.
func (st *attemptState) openDir(dir string, fresh bool, options func() (train.Options, error)) (train.Options, error) {
	if st.lk == nil {
		if err := CheckRunDir(dir, fresh); err != nil {
			return train.Options{}, fmt.Errorf("train: %w", err)
		}
	}
	to, err := options()
	if err != nil {
		return to, err
	}
	if err := st.preflightAndLock(dir, to); err != nil {
		if c, ok := to.Data.(io.Closer); ok {
			_ = c.Close()
		}
		return train.Options{}, err
	}
	return to, nil
}

// preflightAndLock checks the options (train.Preflight, before the monitor
// creates files in dir), makes dir and takes its lock unless st holds it.
func (st *attemptState) preflightAndLock(dir string, to train.Options) error {
	if err := train.Preflight(to); err != nil {
		return err
	}
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
