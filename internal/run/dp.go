package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// trainRanks runs one rank of a data-parallel run (docs/distributed.md).
// Rank 0 is the run as a single process has it — the run directory's lock,
// the monitor, the dashboard, metrics, checkpoints — and trains with the
// other ranks; the other ranks only train (train.Options.Comm). Automatic
// rollback is off: it would restart rank 0 alone.
//
// Start-up is agreed before any rank trains: rank 0 checks the run (a
// half-done rewind completed, the interventions, the data, memory,
// --fresh) and takes the lock, then the others check theirs; after each
// step every rank learns the verdict together (comm.AgreeToStart), so a
// refusal — a lock another job holds above all — ends every rank at once
// with its message instead of leaving the others waiting in a collective
// until train.comm_timeout_s.
func trainRanks(ctx context.Context, cfg config.Config, dir string, opts *Options) (*train.Result, error) {
	c := opts.Comm
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	log = log.With("rank", c.Rank())
	opts.Logger = log
	if t := cfg.Train.CommTimeoutSeconds; t > 0 && !math.IsInf(t, 0) {
		comm.SetTimeout(c, time.Duration(t*float64(time.Second)))
	}
	hs, err := c.AllGatherBytes([]byte(c.Host()))
	if err != nil {
		return nil, fmt.Errorf("train: rank %d: exchanging host names: %w", c.Rank(), err)
	}
	hosts := make([]string, len(hs))
	for i, h := range hs {
		hosts[i] = string(h)
	}
	if cfg.Rescue.AutoRollback {
		if c.Rank() == 0 {
			log.Warn("rescue.auto_rollback is not available with more than one rank: a SEV0 stops every rank; resume with the same command after `kestrel rewind`")
		}
		cfg.Rescue.AutoRollback = false
	}
	if c.Rank() != 0 {
		return trainWorker(ctx, cfg, dir, *opts)
	}
	st := attemptState{hosts: hosts}
	defer st.close()
	lerr := st.leadStart(cfg, dir, *opts)
	if err := agreeToStart(c, dir, lerr); err != nil { // rank 0's verdict
		return nil, err
	}
	if err := agreeToStart(c, dir, nil); err != nil { // the others'
		return nil, err
	}
	log.Info("data-parallel training", "ranks", c.Size(), "hosts", hosts)
	o := *opts
	o.Fresh = false // checked by leadStart, which made the directory
	res, ob, _, _, err := st.attempt(ctx, cfg, dir, o)
	if ob != nil && err != nil {
		return res, fmt.Errorf("train %s: %w", dir, ob.Finish(err))
	}
	return res, err
}

// agreeToStart is comm.AgreeToStart with the run directory named in
// another rank's refusal.
func agreeToStart(c comm.Comm, dir string, err error) error {
	err = comm.AgreeToStart(c, err)
	var se *comm.StartError
	if errors.As(err, &se) {
		return fmt.Errorf("train %s: rank %d: %w", dir, c.Rank(), err)
	}
	return err
}

// leadStart is rank 0's part of a data-parallel start-up, before any rank
// trains: the opening ritual attempt goes through (openDir: the output
// rule, the interventions, completing a half-done rewind; the options and
// the data; Preflight; the run directory's lock, kept in st), whose
// opening st keeps for the attempt that follows (st.pending), so the
// options are built and the data opened once.
func (st *attemptState) leadStart(cfg config.Config, dir string, opts Options) error {
	op, err := st.open(cfg, dir, opts)
	if err != nil {
		return err
	}
	st.pending = &op
	return nil
}

// trainWorker is a rank other than 0: the same options as rank 0's
// (interventions included), no lock, no monitor, no output files. It
// learns rank 0's start-up verdict first, then checks its own options
// (Preflight) and tells every rank.
func trainWorker(ctx context.Context, cfg config.Config, dir string, opts Options) (*train.Result, error) {
	c := opts.Comm
	if err := agreeToStart(c, dir, nil); err != nil { // rank 0's verdict
		return nil, err
	}
	to, err := workerOptions(cfg, dir, opts)
	if err := agreeToStart(c, dir, err); err != nil {
		if cl, ok := to.Data.(io.Closer); ok {
			_ = cl.Close()
		}
		return nil, err
	}
	res, err := train.Run(ctx, to)
	if err != nil {
		return res, fmt.Errorf("train %s: rank %d on %s: %w", dir, c.Rank(), c.Host(), err)
	}
	return res, nil
}

// workerOptions are a worker rank's trainer options, checked by Preflight.
func workerOptions(cfg config.Config, dir string, opts Options) (train.Options, error) {
	cfg, _, err := ApplyInterventions(cfg, dir)
	if err != nil {
		return train.Options{}, fmt.Errorf("train: rank %d: %w", opts.Comm.Rank(), err)
	}
	to, err := TrainOptions(cfg, dir, opts.Logger)
	if err != nil {
		return to, fmt.Errorf("train: rank %d: %w", opts.Comm.Rank(), err)
	}
	to.Comm = opts.Comm
	to.WriteConfig = nil
	if err := train.Preflight(to); err != nil {
		return to, fmt.Errorf("train: rank %d: %w", opts.Comm.Rank(), err)
	}
	return to, nil
}

// setRankHosts passes the ranks' hosts to the monitor (no-op without one).
func (t *Observer) setRankHosts(hosts []string) {
	if t == nil || t.m == nil || len(hosts) == 0 {
		return
	}
	t.m.SetRankHosts(hosts)
}

// rankHang turns a collective timeout into the SEV0 rank_hang; it reports
// whether runErr was one.
func (t *Observer) rankHang(runErr error) bool {
	var he *comm.HangError
	if t.m == nil || !errors.As(runErr, &he) {
		return false
	}
	t.m.RankHang(int64(t.last.Step+1), he.Op, he.Missing, he.Hosts, he.Timeout)
	return true
}
