package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// maxDatasetManifestBytes bounds the dataset manifest.json read for its
// provenance (it lists every shard: large datasets have long ones).
const maxDatasetManifestBytes = 256 << 20

// Decontamination records in the run manifest (runlog.Manifest.Decontam).
const (
	DecontamNone    = "none"    // byte-level text, or a dataset prepared without decontamination
	DecontamUnknown = "unknown" // a dataset built before kestrel recorded its provenance
)

// DatasetProvenance reads the provenance kestrel prepare recorded in the
// manifest.json of the dataset at path (resolved): what it
// was built from and decontaminated against. A dataset built before
// kestrel recorded provenance returns nil and no error. CheckCoverage and
// the run manifest (DecontamRecord) read it here, so they agree.
func DatasetProvenance(path string) (*shards.Provenance, error) {
	mp := filepath.Join(path, "manifest.json")
	b, err := fileguard.ReadFile(mp, maxDatasetManifestBytes)
	if err != nil {
		return nil, err
	}
	var m struct {
		Provenance *shards.Provenance `json:"provenance"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", mp, err)
	}
	return m.Provenance, nil
}

// DecontamRecord is what a run on data with provenance pv records in its
// manifest: the summary ("13-gram drop: gsm8k, hellaswag", DecontamNone
// without decontamination, DecontamUnknown when pv is nil) and one hash
// per evaluation set, "decontam/<name>": the sha256 of its file as prepare
// read it (one file), or the sha256 of the files' sha256s, one hex line
// each, in the set's order (several files). Byte-level runs, which no
// decontamination touched, record DecontamNone and no hashes.
func DecontamRecord(pv *shards.Provenance) (summary string, hashes map[string]string) {
	if pv == nil {
		return DecontamUnknown, nil
	}
	dec := pv.Decontam
	if dec == nil || len(dec.EvalSets) == 0 {
		return DecontamNone, nil
	}
	hashes = map[string]string{}
	names := make([]string, 0, len(dec.EvalSets))
	for _, set := range dec.EvalSets {
		names = append(names, set.Name)
		if len(set.Files) == 1 {
			hashes["decontam/"+set.Name] = set.Files[0].SHA256
			continue
		}
		h := sha256.New()
		for _, f := range set.Files {
			fmt.Fprintf(h, "%s\n", f.SHA256)
		}
		hashes["decontam/"+set.Name] = hex.EncodeToString(h.Sum(nil))
	}
	sort.Strings(names)
	return fmt.Sprintf("%d-gram %s: %s", dec.NGram, dec.Mode, strings.Join(names, ", ")), hashes
}

// StaleDecontam lists the evaluation files of pv whose contents differ now
// from what prepare decontaminated against (or that cannot be read any
// more), each as "set: path (why)": the dataset still holds what it held,
// but it no longer protects the current version of that benchmark; re-run
// kestrel prepare.
func StaleDecontam(pv *shards.Provenance) []string {
	if pv == nil || pv.Decontam == nil {
		return nil
	}
	var out []string
	for _, set := range pv.Decontam.EvalSets {
		for _, f := range set.Files {
			h, err := runlog.HashFile(f.Path)
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%s: %s (%v)", set.Name, f.Path, err))
			case h != f.SHA256:
				out = append(out, fmt.Sprintf("%s: %s (changed since prepare: sha256 %.12s, was %.12s)", set.Name, f.Path, h, f.SHA256))
			}
		}
	}
	return out
}
