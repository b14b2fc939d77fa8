package shards

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
)

// Merge joins datasets that Build wrote into subdirectories of outDir
// (parts, relative to outDir, in document order: a distributed prepare
// builds one per work unit) into outDir/manifest.json. Each source's and
// split's shards are the parts' shards in part order, so its token stream
// is the parts' streams concatenated; totals are summed. Every part must
// have been built with the same tokenizer and settings. outDir/tokenizer.json
// is a copy of the first part's. No shard is copied or rewritten.
func Merge(outDir string, parts []string) (*Manifest, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("shards: merge into %s: no parts", outDir)
	}
	var ms []Manifest
	for _, p := range parts {
		if filepath.IsAbs(p) || !filepath.IsLocal(p) {
			return nil, fmt.Errorf("shards: merge: part %q must be a directory inside %s", p, outDir)
		}
		d, err := Open(filepath.Join(outDir, p))
		if err != nil {
			return nil, fmt.Errorf("shards: merge: %w", err)
		}
		ms = append(ms, *d.Manifest())
		d.Close()
	}
	first := ms[0]
	m := Manifest{Format: Format, TokenBytes: first.TokenBytes, ShardTokens: first.ShardTokens, ValFraction: first.ValFraction,
		Seed: first.Seed, Separator: first.Separator, SeparatorID: first.SeparatorID, Tokenizer: first.Tokenizer, Shards: []ShardInfo{},
		Provenance: first.Provenance}
	m.Tokenizer.File = filepath.ToSlash(filepath.Join(parts[0], first.Tokenizer.File))
	byKey := map[string][]ShardInfo{}
	totals := map[string]*SourceTotals{}
	bh := sha256.New()
	for i, pm := range ms {
		if pm.TokenBytes != m.TokenBytes || pm.ShardTokens != m.ShardTokens || pm.ValFraction != m.ValFraction ||
			pm.Seed != m.Seed || pm.Separator != m.Separator || pm.SeparatorID != m.SeparatorID || pm.Tokenizer.Hash != m.Tokenizer.Hash {
			return nil, fmt.Errorf("shards: merge: part %s was built with other settings or another tokenizer than %s", parts[i], parts[0])
		}
		fmt.Fprintf(bh, "%s %s\n", parts[i], pm.Build)
		for _, s := range pm.Shards {
			s.File = filepath.ToSlash(filepath.Join(parts[i], s.File))
			s.IDsFile = filepath.ToSlash(filepath.Join(parts[i], s.IDsFile))
			key := s.Source + "\x00" + s.Split
			byKey[key] = append(byKey[key], s)
		}
		for _, st := range pm.Sources {
			t := totals[st.Source]
			if t == nil {
				t = &SourceTotals{Source: st.Source}
				totals[st.Source] = t
			}
			t.TrainTokens += st.TrainTokens
			t.TrainDocs += st.TrainDocs
			t.ValTokens += st.ValTokens
			t.ValDocs += st.ValDocs
		}
		m.TotalTokens += pm.TotalTokens
		m.TotalDocs += pm.TotalDocs
	}
	m.Build = hex.EncodeToString(bh.Sum(nil))[:16]
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m.Shards = append(m.Shards, byKey[k]...)
	}
	names := make([]string, 0, len(totals))
	for s := range totals {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		m.Sources = append(m.Sources, *totals[s])
	}
	var err error
	if m.DatasetHash, err = hashManifest(m); err != nil {
		return nil, fmt.Errorf("shards: merge: manifest: %w", err)
	}
	tok, err := os.ReadFile(filepath.Join(outDir, filepath.FromSlash(m.Tokenizer.File)))
	if err != nil {
		return nil, fmt.Errorf("shards: merge: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(outDir, "tokenizer.json"), tok); err != nil {
		return nil, fmt.Errorf("shards: merge: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("shards: merge: manifest: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(outDir, "manifest.json"), append(data, '\n')); err != nil {
		return nil, fmt.Errorf("shards: merge: %w", err)
	}
	return &m, nil
}
