package runlog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
)

// ManifestFile is the name of the manifest in a run directory.
const ManifestFile = rundir.ManifestName

// Manifest is the reproducibility manifest of a run (manifest.json): what
// code, toolchain, machine, config, data, tokenizer, probe and evaluation
// artifacts produced it. It is written at every start of the run; a resume
// compares the fields Diff lists with the previous start's.
type Manifest struct {
	// The build.
	GitSHA      string `json:"git_sha"`
	GitDirty    bool   `json:"git_dirty"`
	GoVersion   string `json:"go_version"`
	ModulesHash string `json:"modules_hash"` // sha256 of the linked module list
	// The machine and the kernels chosen on it.
	OSArch string `json:"os_arch"`
	CPU    string `json:"cpu"`
	NumCPU int    `json:"num_cpu"`
	Kernel string `json:"gemm"` // GEMM implementation and the CPU features it uses
	// PeakGFLOPS is the FMA peak MFU is measured against, and where it came
	// from (configured | cached | probed).
	PeakGFLOPS     float64 `json:"peak_gflops,omitempty"`
	PeakSource     string  `json:"peak_source,omitempty"`
	PeakMeasuredAt string  `json:"peak_measured_at,omitempty"`
	// PeakDtype says what PeakGFLOPS is the peak of: "fp32 fma", or in a
	// bf16 run the bf16 peak and how it was found (peak.ResolveFor).
	PeakDtype string `json:"peak_dtype,omitempty"`
	// Precision is train.precision ("fp32" or "bf16") and BF16Impl the bf16
	// GEMM implementation of a bf16 run (kernels.BF16Impl: "avx512bf16",
	// or "ref", rounded copies on the float32 kernels).
	Precision string `json:"precision,omitempty"`
	BF16Impl  string `json:"bf16_impl,omitempty"`
	// The run's inputs.
	ConfigHash string `json:"config_hash"` // sha256 of the resolved config.toml
	// BaseConfigHash is the hash of the config before the overrides of
	// Interventions (the ids of interventions.jsonl's effective entries)
	// were applied; both are empty for a run without interventions. Diff
	// compares this hash, so a knob a recorded intervention turned
	// (kestrel rewind --set) is not a mismatch, and any other change is.
	BaseConfigHash string    `json:"base_config_hash,omitempty"`
	Interventions  []string  `json:"interventions,omitempty"`
	Seed           uint64    `json:"seed"`
	Data           *DataInfo `json:"data,omitempty"`
	DatasetHash    string    `json:"dataset_hash"`   // sha256 of the dataset manifest (or of the text files)
	Tokenizer      string    `json:"tokenizer"`      // "bytes", or the tokenizer file
	TokenizerHash  string    `json:"tokenizer_hash"` // sha256 of the tokenizer file ("" for bytes)
	// QuarantineHash is the sha256 of the dataset's quarantine overlay
	// (data.quarantine), "none" for a dataset run without one, "" for runs
	// that read no dataset.
	QuarantineHash string `json:"quarantine_hash,omitempty"`
	// Decontam says what the training data was decontaminated against, as
	// the dataset's provenance records it (internal/eval.DecontamRecord):
	// "13-gram drop: gsm8k, hellaswag", "none" (byte-level text, or a
	// dataset prepared without decontamination) or "unknown" (a dataset
	// built before kestrel recorded its provenance). EvalHashes holds the
	// sets' hashes as "decontam/<name>", and the hashes of the files the
	// in-loop benchmarks ("eval/<task>") and held-out sets
	// ("heldout/<name>") read.
	Decontam   string            `json:"decontam,omitempty"`
	EvalHashes map[string]string `json:"eval_hashes,omitempty"`
	ProbeHash  string            `json:"probe_hash,omitempty"`
	Probe      *ProbeInfo        `json:"probe,omitempty"`
	// The model.
	NumParams     int     `json:"num_params,omitempty"`
	FLOPsPerToken float64 `json:"flops_per_token,omitempty"`
	// MemoryEstimate is the preflight's estimate of the run's memory in
	// bytes (train.EstimateMemory), beside the measured peak rss_bytes.
	MemoryEstimate int64 `json:"memory_estimate_bytes,omitempty"`
	// WarmStart is the warm-start report of a run initialised from another
	// checkpoint (the trainer's WarmStartReport).
	WarmStart json.RawMessage `json:"warm_start,omitempty"`
	// Parent is a branch's origin and change (kestrel branch; the branch's
	// branch.json, copied at every start); nil for a run that is no branch.
	Parent *Parent `json:"parent,omitempty"`
	// Starts lists every start of the run, oldest first.
	Starts []Start `json:"starts"`
}

// DataInfo describes the training data of a run.
type DataInfo struct {
	Kind        string  `json:"kind"`                   // bytes | dataset
	Path        string  `json:"path,omitempty"`         // the dataset directory
	Train       string  `json:"train,omitempty"`        // bytes: the training text file
	Val         string  `json:"val,omitempty"`          // bytes: the validation text file, if any
	ValFraction float64 `json:"val_fraction,omitempty"` // bytes: held out when there is no Val
	TrainBytes  int64   `json:"train_bytes,omitempty"`
	ValBytes    int64   `json:"val_bytes,omitempty"`
}

// ProbeInfo describes the frozen probe batch.
type ProbeInfo struct {
	File      string   `json:"file"`
	Sequences int      `json:"sequences"`
	Sources   []string `json:"sources,omitempty"`
}

// Start is one (re)start of a run.
type Start struct {
	Time        string `json:"time"`
	Step        int    `json:"step"`
	ConfigHash  string `json:"config_hash"`
	ResumedFrom string `json:"resumed_from,omitempty"`
	// QuarantineHash is the manifest's quarantine_hash at this start: the
	// overlay the steps after Step were trained with.
	QuarantineHash string `json:"quarantine_hash,omitempty"`
	// OptimizerSwap is the optimizer swap this start made on its
	// checkpoint's state ("adamw→muon at step 1000"; optim.name changed
	// by an intervention or a branch), empty for none.
	OptimizerSwap string `json:"optimizer_swap,omitempty"`
}

// WriteManifest writes m to dir/manifest.json atomically.
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n')); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// maxManifestBytes bounds the manifest.json ReadManifest reads.
const maxManifestBytes = 64 << 20

// ReadManifest reads dir/manifest.json. A missing file returns
// fs.ErrNotExist (test with errors.Is).
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := fileguard.ReadFile(path, maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest: %s: %w", path, err)
	}
	return &m, nil
}

// Diff lists the fields that differ between m (the manifest of the run
// being resumed) and cur, each as "field: old → new". Machine size
// (num_cpu, the CPU model) and the measured peak may change between
// resumes; the build, the kernels, the config and every hashed input may
// not without a SEV1. A field the previous manifest did not record (an
// older kestrel, a test binary without a commit) is not compared.
func (m *Manifest) Diff(cur *Manifest) []string {
	var out []string
	cmp := func(name, a, b string) {
		if a != "" && a != b {
			out = append(out, fmt.Sprintf("%s: %s → %s", name, short(a), short(b)))
		}
	}
	cmp("git_sha", m.GitSHA, cur.GitSHA)
	cmp("go_version", m.GoVersion, cur.GoVersion)
	cmp("modules_hash", m.ModulesHash, cur.ModulesHash)
	cmp("os_arch", m.OSArch, cur.OSArch)
	cmp("gemm", m.Kernel, cur.Kernel)
	cmp("config_hash", m.userConfigHash(), cur.userConfigHash())
	cmp("dataset_hash", m.DatasetHash, cur.DatasetHash)
	cmp("tokenizer_hash", m.TokenizerHash, cur.TokenizerHash)
	cmp("probe_hash", m.ProbeHash, cur.ProbeHash)
	// A changed quarantine overlay is intended (kestrel quarantine) but
	// changes the data order from step 1, so it is named like any input.
	cmp("quarantine_hash", m.QuarantineHash, cur.QuarantineHash)
	cmp("decontam", m.Decontam, cur.Decontam)
	keys := map[string]bool{}
	for k := range m.EvalHashes {
		keys[k] = true
	}
	for k := range cur.EvalHashes {
		keys[k] = true
	}
	ks := make([]string, 0, len(keys))
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		cmp("eval_hashes."+k, m.EvalHashes[k], cur.EvalHashes[k])
	}
	return out
}

// userConfigHash is the hash of the config as the user gave it: before
// the overrides recorded by interventions.
func (m *Manifest) userConfigHash() string {
	if m.BaseConfigHash != "" {
		return m.BaseConfigHash
	}
	return m.ConfigHash
}

func short(s string) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > 16 && !strings.ContainsAny(s, " /") {
		return s[:16]
	}
	return s
}

// HashFile returns the hex SHA-256 of the file at path.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash: %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HashFiles returns the hex SHA-256 over the contents of several files, each
// preceded by its length (so moving bytes between files changes the hash).
func HashFiles(paths ...string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return "", fmt.Errorf("hash: %w", err)
		}
		st, err := f.Stat()
		if err == nil {
			fmt.Fprintf(h, "%d\n", st.Size())
			_, err = io.Copy(h, f)
		}
		f.Close()
		if err != nil {
			return "", fmt.Errorf("hash: %s: %w", p, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
