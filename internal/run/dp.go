package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// trainRanks runs one rank of a data-parallel run (docs/distributed.md).
// Rank 0 is the run as a single process has it — the run directory's lock,
// the monitor, the dashboard, metrics, checkpoints — and trains with the
// other ranks; the other ranks only train (train.Options.Comm). Automatic
// rollback is off: it would restart rank 0 alone.
func trainRanks(ctx context.Context, cfg config.Config, dir string, opts *Options) (*train.Result, error) {
	c := opts.Comm
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	log = log.With("rank", c.Rank())
	opts.Logger = log
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
	log.Info("data-parallel training", "ranks", c.Size(), "hosts", hosts)
	st := attemptState{hosts: hosts}
	defer st.close()
	res, ob, _, _, err := st.attempt(ctx, cfg, dir, *opts)
	if ob != nil && err != nil {
		return res, fmt.Errorf("train %s: %w", dir, ob.Finish(err))
	}
	return res, err
}

// trainWorker is a rank other than 0: the same options as rank 0's
// (interventions included), no lock, no monitor, no output files.
func trainWorker(ctx context.Context, cfg config.Config, dir string, opts Options) (*train.Result, error) {
	cfg, _, err := ApplyInterventions(cfg, dir)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	to, err := TrainOptions(cfg, dir, opts.Logger)
	if err != nil {
		return nil, err
	}
	to.Comm = opts.Comm
	to.WriteConfig = nil
	res, err := train.Run(ctx, to)
	if err != nil {
		return res, fmt.Errorf("train %s: rank %d on %s: %w", dir, opts.Comm.Rank(), opts.Comm.Host(), err)
	}
	return res, nil
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

// EndRank ends this process's part of the group c after Train returned
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
