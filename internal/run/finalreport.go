package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/report"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// maxUnigramTokens bounds the dataset a run's report reads for its
// unigram baseline (every token of the dataset is read once); a larger
// dataset's report goes without it.
const maxUnigramTokens = 1 << 28

// ReportOptions say how a run's report is built.
type ReportOptions struct {
	// Config is the run's config; nil reads the run's config.toml.
	Config *config.Config
	// Status says how the run stands (report.Input.Status); "" lets
	// WriteReport find out: live when a trainer holds the run's lock.
	Status string
	Logger *slog.Logger
}

// WriteReport builds dir/report/ (report.md and its plots: the verdict,
// curves, alerts, interventions, data report, the samples of each
// checkpoint and the manifest) from the run's files. It reads the run
// and writes only report/: it never takes the run's lock, so a live run
// gets a snapshot, marked live. dir must be a kestrel run directory with
// metrics (its files, not just a name), else it is refused naming it.
func WriteReport(dir string, o ReportOptions) (*report.Summary, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if st, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("report: %s is not a directory", dir)
	}
	if !isRunDir(dir) && !fileguard.HasMarker(dir, rundir.ConfigName, rundir.MetricsName) {
		return nil, fmt.Errorf("report: %s is not a kestrel run directory (no config.toml, metrics.jsonl, run manifest.json or checkpoints/ in it)", dir)
	}
	cfg := o.Config
	if cfg == nil {
		c, err := config.Load(rundir.Of(dir).Config(), nil)
		if err != nil {
			log.Warn("report: the run's config.toml is unreadable; the data report and unigram baseline are left out", "err", err)
		} else {
			cfg = &c
		}
	}
	in := report.Input{RunDir: dir, UnigramLoss: nan(), Status: o.Status}
	if in.Status == "" {
		in.Status, in.Live = liveStatus(dir)
	}
	if cfg != nil {
		in.Title = cfg.Run.Name
		in.DatasetDir, in.UnigramLoss = reportData(*cfg, log)
	}
	// A dataset that moved or was deleted: the copy the run kept.
	if in.DatasetDir != "" && !fileguard.HasMarker(in.DatasetDir, datareport.FileName) && fileguard.HasMarker(dir, DataReportFile) {
		in.DataReport = filepath.Join(dir, DataReportFile)
	}
	return report.Write(in)
}

// reportData is the dataset directory of a dataset run ("" for a
// byte-level run) and the unigram baseline of the run's data (NaN when
// it cannot be had cheaply).
func reportData(raw config.Config, log *slog.Logger) (string, float64) {
	cfg, err := config.Resolve(raw, "data")
	if err != nil {
		log.Warn("report: no unigram baseline", "err", err)
		return "", nan()
	}
	switch cfg.Data.Kind {
	case "dataset":
		ds := cfg.Data.Path
		if r, err := datareport.Load(ds); err == nil && r.Tokens != nil && r.Tokens.TotalTokens > maxUnigramTokens {
			return ds, nan() // reading every token would take longer than the report is worth
		}
		u, err := report.UnigramBaseline(ds)
		if err != nil {
			log.Warn("report: no unigram baseline", "err", err)
		}
		return ds, u
	case "bytes":
		src, err := datasrc.OpenBytes(cfg.Data.Train, cfg.Data.Val, cfg.Train.ValFraction, cfg.Model.SeqLen, cfg.Run.Seed)
		if err != nil {
			log.Warn("report: no unigram baseline", "err", err)
			return "", nan()
		}
		return "", report.UnigramBytes(src.Text())
	}
	return "", nan()
}

// liveStatus reads the run's lock file without taking it: a holder whose
// process runs (or that runs on another host) makes the run live.
func liveStatus(dir string) (string, bool) {
	b, err := fileguard.ReadFile(filepath.Join(dir, runlock.FileName), 1<<16)
	if errors.Is(err, fs.ErrNotExist) {
		return "not running (no trainer holds the run)", false
	}
	var h runlock.Holder
	if err != nil || json.Unmarshal(b, &h) != nil {
		return "live? the run's lock file is unreadable, so a trainer may hold it: this report is a snapshot", true
	}
	host, _ := os.Hostname()
	if h.Host == host && h.PID > 0 && !pidRuns(h.PID) {
		return fmt.Sprintf("stopped: its trainer (%s) died without releasing the lock (kill -9 or a crash); `kestrel train` resumes it", h), false
	}
	return fmt.Sprintf("live: a trainer (%s) holds the run; this report is a snapshot of what it has written so far", h), true
}

// pidRuns reports whether process pid exists (signal 0).
func pidRuns(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// endStatus says how Train ended, for the report.
func endStatus(res *train.Result, err error) string {
	step := 0
	if res != nil {
		step = res.Step
	}
	switch {
	case err != nil:
		return fmt.Sprintf("stopped: %v", err)
	case res == nil:
		return ""
	case res.TimeLimited:
		return fmt.Sprintf("stopped at the time limit (train.max_minutes) at step %d; `kestrel train` continues it", step)
	case res.Interrupted:
		return fmt.Sprintf("interrupted (Ctrl-C) at step %d; `kestrel train` resumes it", step)
	default:
		return fmt.Sprintf("finished at step %d", step)
	}
}

// finalReport writes the report when Train returns with the run's lock
// held (the run started in dir). A report that cannot be built is a
// warning: it never fails the run nor touches what the run wrote.
func (st *attemptState) finalReport(dir string, cfg config.Config, res *train.Result, runErr error, out io.Writer) {
	if st.lk == nil || !st.lk.Held() {
		return // the run never started here (refused, or another trainer holds it)
	}
	log := st.log
	if log == nil {
		log = slog.Default()
	}
	if _, err := os.Stat(rundir.Of(dir).Metrics()); err != nil {
		return // not a step was taken: nothing to report
	}
	sum, err := WriteReport(dir, ReportOptions{Config: &cfg, Status: endStatus(res, runErr), Logger: log})
	if err != nil {
		log.Warn("report: not written (the run is unaffected; `kestrel report "+dir+"` retries)", "err", err)
		return
	}
	verdict := "healthy"
	if !sum.Healthy {
		verdict = "needs a look"
	}
	fmt.Fprintf(out, "report: %s (verdict: %s)\n", sum.Path, verdict)
}

func nan() float64 { return math.NaN() }
