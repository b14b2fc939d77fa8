package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"time"

	"github.com/kestrel-lm/kestrel/internal/buildinfo"
	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/peak"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// writeManifest writes Dir/manifest.json at the start of this invocation:
// Options.Manifest (the run's inputs, filled by the caller) completed with
// the build, the machine, the model, the probe, the warm-start report and
// this start appended to the starts recorded before.
func (t *trainer) writeManifest(res *Result) error {
	man := t.o.Manifest
	prev, err := runlog.ReadManifest(t.o.Dir)
	switch {
	case err == nil:
		man.Starts = prev.Starts
		if t.st.WarmStart == nil {
			man.WarmStart = prev.WarmStart
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	man.GitSHA, man.GitDirty = buildinfo.VCS()
	man.GoVersion = runtime.Version()
	man.ModulesHash = buildinfo.ModulesHash()
	man.OSArch = runtime.GOOS + "/" + runtime.GOARCH
	man.CPU = peak.CPUModel()
	man.NumCPU = runtime.NumCPU()
	man.Kernel = kernels.Impl() + " " + kernels.FeatureString()
	man.ConfigHash = t.o.ConfigHash
	man.Seed = t.o.Seed
	man.NumParams = len(t.net.Params())
	man.FLOPsPerToken = t.net.FLOPsPerToken()
	if est, err := preflightEstimate(t.o); err == nil {
		man.MemoryEstimate = int64(est.Total())
	}
	man.PeakGFLOPS, man.PeakSource, man.PeakMeasuredAt = t.peak.GFLOPS, string(t.peak.Source), ""
	man.Precision, man.PeakDtype, man.BF16Impl = t.prec.String(), t.peakDtype, ""
	if t.prec == ops.BF16 {
		man.BF16Impl = kernels.BF16Impl()
	}
	if t.peak.Source == peak.Cached {
		man.PeakMeasuredAt = t.peak.MeasuredAt.UTC().Format(time.RFC3339)
	}
	if man.Tokenizer == "" {
		man.Tokenizer = t.o.Tokenizer
	}
	if t.probe != nil {
		man.ProbeHash = t.probe.SHA256
		man.Probe = &runlog.ProbeInfo{File: ProbeFile, Sequences: t.probe.B, Sources: t.probe.Sources}
	}
	if t.st.WarmStart != nil {
		if man.WarmStart, err = json.Marshal(t.st.WarmStart); err != nil {
			return fmt.Errorf("manifest: warm start: %w", err)
		}
	}
	start := runlog.Start{Time: time.Now().UTC().Format(time.RFC3339), Step: t.st.Step, ConfigHash: t.o.ConfigHash, QuarantineHash: man.QuarantineHash, OptimizerSwap: swapNote(t.swap, t.st.Step)}
	if res.Resumed {
		start.ResumedFrom = res.Checkpoint
	}
	man.Starts = append(man.Starts, start)
	return runlog.WriteManifest(t.o.Dir, &man)
}
