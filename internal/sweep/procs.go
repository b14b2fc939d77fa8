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
	cd := filepath.Join(o.Out, configsDir)
	if err := os.MkdirAll(cd, 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if !isDir(cd) {
		return fmt.Errorf("sweep: %s is not a directory (a link or a file): nothing is written through it", cd)
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
		cfgPath, dir := filepath.Join(cd, p.Name+".toml"), Dir(o.Out, p)
		if err := config.WriteFile(cfgPath, cfgs[i]); err != nil {
			errs[i] = err
			<-sem
			continue
		}
		log.Info("sweep: run", "n", i+1, "of", len(points), "name", p.Name, "dir", dir, "log", dir+".log")
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = trainProcess(ctx, bin, cfgPath, dir, dir+".log")
			if errs[i] != nil {
				log.Warn("sweep: run failed", "name", p.Name, "err", errs[i])
			}
		}()
	}
	wg.Wait()
	return nil
}

// trainProcess runs `bin train --config cfgPath --out dir` on one thread
// with its output appended to logPath (a resumed sweep keeps the
// interrupted attempt's log above a line that marks the new start; a
// logPath that is a link or not a regular file is refused).
func trainProcess(ctx context.Context, bin, cfgPath, dir, logPath string) error {
	if st, err := os.Lstat(logPath); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("sweep: log %s is not a regular file (%s): nothing is written through it", logPath, st.Mode().Type())
	}
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	defer lf.Close()
	if _, err := fmt.Fprintf(lf, "=== kestrel sweep: %s train --config %s --out %s (%s)\n", bin, cfgPath, dir, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("sweep: log %s: %w", logPath, err)
	}
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
