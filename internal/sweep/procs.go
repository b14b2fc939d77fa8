package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/kestrel-lm/kestrel/internal/config"
)

// configsDir holds the resolved config of each point a process trains
// from (--config), inside the sweep's directory.
const configsDir = ".configs"

// runProcesses trains o.Parallel points at a time, each a `kestrel train`
// process on one thread (GOMAXPROCS=1) whose output goes to NAME.log in
// the sweep's directory. Cancelling ctx sends each running process an
// interrupt (it writes a checkpoint and exits) and starts no more.
func runProcesses(ctx context.Context, o Options, points []Point, cfgs []config.Config, started []bool, errs []error, log *slog.Logger) error {
	bin := o.Exec
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("sweep: --parallel: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(o.Out, configsDir), 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, p := range points {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		started[i] = true
		cfgPath := filepath.Join(o.Out, configsDir, p.Name+".toml")
		if err := config.WriteFile(cfgPath, cfgs[i]); err != nil {
			errs[i] = err
			<-sem
			continue
		}
		log.Info("sweep: run", "n", i+1, "of", len(points), "name", p.Name, "dir", Dir(o.Out, p), "log", Dir(o.Out, p)+".log")
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = trainProcess(ctx, bin, cfgPath, Dir(o.Out, p), Dir(o.Out, p)+".log")
			if errs[i] != nil {
				log.Warn("sweep: run failed", "name", p.Name, "err", errs[i])
			}
		}()
	}
	wg.Wait()
	return nil
}

// trainProcess runs `bin train --config cfgPath --out dir` on one thread
// with its output in logPath.
func trainProcess(ctx context.Context, bin, cfgPath, dir, logPath string) error {
	lf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	defer lf.Close()
	cmd := exec.CommandContext(ctx, bin, "train", "--config", cfgPath, "--out", dir)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * time.Minute // the interrupted run writes its checkpoint and report
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted: the run stopped the way Ctrl-C stops it
		}
		return fmt.Errorf("sweep: kestrel train %s (log %s): %w", dir, logPath, err)
	}
	return nil
}
