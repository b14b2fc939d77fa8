package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/buildinfo"
	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// writeManifest creates or updates Dir/manifest.json: build and machine
// facts, the config hash, the data description, the warm-start report and a
// list of (re)starts. Keys written by others are preserved.
func (t *trainer) writeManifest(res *Result) error {
	path := filepath.Join(t.o.Dir, "manifest.json")
	man := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &man); err != nil {
			return fmt.Errorf("manifest: %s: %w", path, err)
		}
	}
	sha, modified := buildinfo.VCS()
	man["git_sha"] = sha
	man["git_dirty"] = modified
	man["go_version"] = runtime.Version()
	man["os_arch"] = runtime.GOOS + "/" + runtime.GOARCH
	man["cpu"] = cpuModel()
	man["num_cpu"] = runtime.NumCPU()
	man["gemm"] = kernels.Impl() + " " + kernels.FeatureString()
	man["config_hash"] = t.o.ConfigHash
	man["seed"] = t.o.Seed
	man["num_params"] = len(t.net.Params())
	man["flops_per_token"] = t.net.FLOPsPerToken()
	if t.o.DataInfo != nil {
		man["data"] = t.o.DataInfo
	}
	for k, v := range t.o.Manifest {
		man[k] = v
	}
	if t.probe != nil {
		man["probe_hash"] = t.probe.SHA256
		man["probe"] = map[string]any{"file": ProbeFile, "sequences": t.probe.B, "sources": t.probe.Sources}
	}
	if t.st.WarmStart != nil {
		man["warm_start"] = t.st.WarmStart
	}
	starts, _ := man["starts"].([]any)
	entry := map[string]any{"time": time.Now().UTC().Format(time.RFC3339), "step": t.st.Step, "config_hash": t.o.ConfigHash}
	if res.Resumed {
		entry["resumed_from"] = res.Checkpoint
	}
	man["starts"] = append(starts, entry)
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// measurePeakFLOPS measures the FMA peak of this machine on the kernels'
// threads (kernels.PeakGFLOPS), the reference for mfu when
// train.peak_gflops is 0.
func measurePeakFLOPS() float64 {
	return kernels.PeakGFLOPS(kernels.Threads(), 300*time.Millisecond) * 1e9
}
