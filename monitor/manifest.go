package monitor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sys/cpu"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/buildinfo"
)

// Manifest is the reproducibility manifest of a run (manifest.json): what
// code, toolchain, machine, config, tokenizer, data and probe/eval
// artifacts produced it. Two runs are comparable only when their manifests
// agree on everything but Host/Machine details.
type Manifest struct {
	GitSHA        string            `json:"git_sha"`
	GitDirty      bool              `json:"git_dirty"`
	GoVersion     string            `json:"go_version"`
	GOOS          string            `json:"goos"`
	GOARCH        string            `json:"goarch"`
	CPUFeatures   []string          `json:"cpu_features"`
	NumCPU        int               `json:"num_cpu"`
	ConfigHash    string            `json:"config_hash"`
	TokenizerHash string            `json:"tokenizer_hash,omitempty"`
	DatasetHash   string            `json:"dataset_hash,omitempty"`
	ProbeHash     string            `json:"probe_hash,omitempty"`
	EvalHashes    map[string]string `json:"eval_hashes,omitempty"`
	Extra         map[string]string `json:"extra,omitempty"`
}

// ManifestInputs names the artifacts a manifest hashes. Empty paths are
// left out.
type ManifestInputs struct {
	ConfigTOML    []byte            // the resolved config
	TokenizerPath string            // tokenizer.json (or any tokenizer file)
	DatasetPath   string            // the dataset manifest.json (or data file)
	ProbePath     string            // the frozen probe batch
	EvalPaths     map[string]string // eval artifact name -> file
	RepoDir       string            // where to ask git for the commit (default ".")
}

// NewManifest builds the manifest of the current process and inputs.
func NewManifest(in ManifestInputs) (Manifest, error) {
	m := Manifest{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
		CPUFeatures: cpuFeatures(), ConfigHash: hashBytes(in.ConfigTOML)}
	m.GitSHA, m.GitDirty = gitState(in.RepoDir)
	var err error
	if m.TokenizerHash, err = hashFile(in.TokenizerPath); err != nil {
		return m, err
	}
	if m.DatasetHash, err = hashFile(in.DatasetPath); err != nil {
		return m, err
	}
	if m.ProbeHash, err = hashFile(in.ProbePath); err != nil {
		return m, err
	}
	if len(in.EvalPaths) > 0 {
		m.EvalHashes = map[string]string{}
		for k, p := range in.EvalPaths {
			if m.EvalHashes[k], err = hashFile(p); err != nil {
				return m, err
			}
		}
	}
	return m, nil
}

func hashBytes(b []byte) string {
	if b == nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func hashFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("manifest: %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func cpuFeatures() []string {
	var fs []string
	add := func(ok bool, name string) {
		if ok {
			fs = append(fs, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		add(cpu.X86.HasAVX, "avx")
		add(cpu.X86.HasAVX2, "avx2")
		add(cpu.X86.HasFMA, "fma")
		add(cpu.X86.HasAVX512F, "avx512f")
		add(cpu.X86.HasAVX512BW, "avx512bw")
		add(cpu.X86.HasAVX512VL, "avx512vl")
	case "arm64":
		add(cpu.ARM64.HasASIMD, "asimd")
		add(cpu.ARM64.HasFPHP, "fphp")
		add(cpu.ARM64.HasSVE, "sve")
	}
	return fs
}

// gitState returns the commit and dirty flag from the build info, or from
// git in dir when the binary was built without VCS stamping.
func gitState(dir string) (string, bool) {
	if sha, dirty := buildinfo.VCS(); sha != "" {
		return sha, dirty
	}
	if dir == "" {
		dir = "."
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	st, _ := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), len(strings.TrimSpace(string(st))) > 0
}

// WriteManifest writes m to <dir>/manifest.json (temp file, then rename).
func WriteManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// ReadManifest reads <dir>/manifest.json.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	path := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("manifest: %s: %w", path, err)
	}
	return m, nil
}

// Diff lists the fields that differ between m (the resumed run) and cur,
// ignoring machine size (NumCPU). Each entry reads "field: old → new".
func (m Manifest) Diff(cur Manifest) []string {
	var out []string
	cmp := func(name, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s: %s → %s", name, short(a), short(b)))
		}
	}
	cmp("git_sha", m.GitSHA, cur.GitSHA)
	cmp("go_version", m.GoVersion, cur.GoVersion)
	cmp("goarch", m.GOARCH, cur.GOARCH)
	cmp("cpu_features", strings.Join(m.CPUFeatures, ","), strings.Join(cur.CPUFeatures, ","))
	cmp("config_hash", m.ConfigHash, cur.ConfigHash)
	cmp("tokenizer_hash", m.TokenizerHash, cur.TokenizerHash)
	cmp("dataset_hash", m.DatasetHash, cur.DatasetHash)
	cmp("probe_hash", m.ProbeHash, cur.ProbeHash)
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

func short(s string) string {
	if s == "" {
		return "(none)"
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
