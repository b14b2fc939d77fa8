// Package datareport holds the types of a prepared dataset's report.json
// (what went into kestrel prepare, what came out, and why), the stage
// names they use, and the one reader and writer of that file. prepare
// fills a Report and writes it; the run report (internal/report) reads it
// without importing the pipeline.
package datareport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// FileName is the report's name inside a dataset directory.
const FileName = "report.json"

// Stage names used in reports and rejects/<stage>.jsonl.zst.
const (
	StageRead     = "read"
	StageExtract  = "extract"
	StageClean    = "clean"
	StageExact    = "exact_dedup"
	StageNear     = "near_dedup"
	StageDecontam = "decontam"
)

// Stages lists the document stages in pipeline order.
var Stages = []string{StageRead, StageExtract, StageClean, StageExact, StageNear, StageDecontam}

// Report is report.json: what went in, what came out, and why.
type Report struct {
	Version     int                    `json:"version"`
	Fingerprint string                 `json:"fingerprint"` // sha256 of resolved config, binary version, input sizes/mtimes and eval-file contents; equal = up to date
	Complete    bool                   `json:"complete"`
	UpToDate    bool                   `json:"up_to_date,omitempty"` // set on the returned value when nothing was rebuilt
	Created     string                 `json:"created"`
	Out         string                 `json:"out"`
	Workers     int                    `json:"workers"`
	Sources     []*SourceReport        `json:"sources"`
	Totals      map[string]*StageCount `json:"totals"` // per stage, over all sources
	Kept        Count                  `json:"kept"`
	Rejects     map[string]int64       `json:"rejects"` // "stage/rule" → documents
	Problems    ProblemReport          `json:"problems"`

	ExactDupRate float64   `json:"exact_dup_rate"` // exact duplicates / documents entering exact dedup
	NearDupRate  float64   `json:"near_dup_rate"`  // near duplicates dropped / documents entering near dedup
	NearClusters int       `json:"near_clusters"`
	Hotspots     []Hotspot `json:"hotspots"`

	TrainValOverlap map[string]float64  `json:"train_val_overlap"` // eval set → contaminated docs / docs checked
	Overlap         map[string]*Overlap `json:"overlap"`
	DecontamCutDocs int64               `json:"decontam_cut_docs"`

	BytesPerDoc Percentiles `json:"bytes_per_doc"` // kept documents, all sources

	DocShards   []ShardFile  `json:"doc_shards"`
	RejectFiles []ShardFile  `json:"reject_files"`
	Tokens      *TokenReport `json:"tokens,omitempty"`

	TimingsS map[string]float64 `json:"timings_s"`

	Dist *DistReport `json:"dist,omitempty"` // distributed runs only
}

// Count is documents and bytes.
type Count struct {
	Docs  int64 `json:"docs"`
	Bytes int64 `json:"bytes"`
}

// StageCount is what entered and left one stage.
type StageCount struct {
	In  Count `json:"in"`
	Out Count `json:"out"`
}

// Add counts one document of the given size entering (in) or leaving the stage.
func (s *StageCount) Add(in bool, bytes int) {
	c := &s.Out
	if in {
		c = &s.In
	}
	c.Docs++
	c.Bytes += int64(bytes)
}

// SourceReport is one source's part of the report.
type SourceReport struct {
	Name        string                 `json:"name"`
	Files       int                    `json:"files"`
	Truncated   bool                   `json:"truncated"` // stopped by max_docs / max_bytes
	Stages      map[string]*StageCount `json:"stages"`
	Kept        Count                  `json:"kept"`
	Rejects     map[string]int64       `json:"rejects"`
	Problems    map[string]int64       `json:"problems"` // malformed input by kind
	Skipped     map[string]int64       `json:"skipped"`  // non-document records by kind
	BytesPerDoc Percentiles            `json:"bytes_per_doc"`
}

// NewSourceReport returns an empty report for source name.
func NewSourceReport(name string) *SourceReport {
	return &SourceReport{Name: name, Stages: map[string]*StageCount{}, Rejects: map[string]int64{}, Problems: map[string]int64{}, Skipped: map[string]int64{}}
}

// Stage returns the count of stage name, creating it.
func (s *SourceReport) Stage(name string) *StageCount {
	c := s.Stages[name]
	if c == nil {
		c = &StageCount{}
		s.Stages[name] = c
	}
	return c
}

// ProblemReport counts malformed input.
type ProblemReport struct {
	Total  int64            `json:"total"`
	Counts map[string]int64 `json:"counts"`
	List   []string         `json:"list"` // the first few, "file:line N: kind: detail"
	// FilesSkipped counts input files whose rest (or whole) was skipped
	// because it could not be read or decoded (0 bytes, not in its
	// compression format, corrupt, truncated); each is also a problem
	// counted above by kind.
	FilesSkipped int64 `json:"files_skipped"`
}

// Hotspot is one large near-duplicate cluster.
type Hotspot struct {
	Size    int      `json:"size"`
	KeptID  string   `json:"kept_id"`
	Members []string `json:"members"` // first few
	Sample  string   `json:"sample"`  // start of the kept document
}

// Overlap is the contamination found for one eval set.
type Overlap struct {
	Docs      int64            `json:"docs"`
	PerSource map[string]int64 `json:"per_source"`
	ItemIDs   []string         `json:"item_ids"` // matched eval items (first few, distinct)
	Items     int              `json:"items"`    // distinct matched eval items
	Examples  []OverlapExample `json:"examples"`
}

// OverlapExample is one contaminated document.
type OverlapExample struct {
	DocID string `json:"doc_id"`
	NGram string `json:"ngram"`
}

// Percentiles of a size distribution.
type Percentiles struct {
	N   int   `json:"n"`
	P10 int32 `json:"p10"`
	P50 int32 `json:"p50"`
	P90 int32 `json:"p90"`
	P99 int32 `json:"p99"`
	Max int32 `json:"max"`
}

// PercentilesOf summarises the sizes v (v is not modified).
func PercentilesOf(v []int32) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) int32 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Percentiles{N: len(s), P10: at(0.10), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: s[len(s)-1]}
}

// TokenReport summarises the tokenizer stage.
type TokenReport struct {
	Mode        string           `json:"mode"`
	Tokenizer   string           `json:"tokenizer"`
	VocabSize   int              `json:"vocab_size"`
	Manifest    string           `json:"manifest"`
	DatasetHash string           `json:"dataset_hash"`
	Tokens      map[string]int64 `json:"tokens"` // per source, train + val
	TotalTokens int64            `json:"total_tokens"`
}

// ShardFile describes one written document shard (docs/…) or reject file (rejects/…).
type ShardFile struct {
	Path   string `json:"path"` // relative to the dataset directory
	Source string `json:"source"`
	Docs   int64  `json:"docs"`
	Bytes  int64  `json:"bytes"` // uncompressed JSONL bytes
}

// Marshal renders r as report.json: indented JSON ending in a newline.
func Marshal(r *Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileName, err)
	}
	return append(b, '\n'), nil
}

// Parse decodes the contents of a report.json; name labels errors.
func Parse(b []byte, name string) (*Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &r, nil
}

// Load reads <dir>/report.json.
func Load(dir string) (*Report, error) {
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// RejectRules lists the "stage/rule" keys of Rejects, most documents first
// (ties by name).
func (r *Report) RejectRules() []string {
	keys := make([]string, 0, len(r.Rejects))
	for k := range r.Rejects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r.Rejects[keys[i]] != r.Rejects[keys[j]] {
			return r.Rejects[keys[i]] > r.Rejects[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
