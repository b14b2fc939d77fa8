// Package prepare runs the data pipeline behind `kestrel prepare`: read
// sources, filter, deduplicate, decontaminate, tokenize and shard, keeping a
// reason for every rejected document.
package prepare

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/data/clean"
	"github.com/kestrel-lm/kestrel/internal/data/corpus"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/dedup"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/tomlstrict"
)

// Config is the [prepare] section of a data config.
type Config struct {
	Sources     []Source `toml:"sources" comment:"input sources as [[prepare.sources]] tables; each becomes a source tag downstream"`
	Workers     int      `toml:"workers" comment:"document worker goroutines (0 = GOMAXPROCS)"`
	MaxDocBytes int      `toml:"max_doc_bytes" comment:"documents larger than this are skipped as malformed input (too_large)"`
	UTF8        string   `toml:"utf8" comment:"invalid UTF-8 in input: repair (replace with U+FFFD, reported) or skip (reported)"`
	ShardBytes  int64    `toml:"shard_bytes" comment:"uncompressed bytes per kept-document shard docs/<source>-NNNNN.jsonl.zst"`
	LogEvery    string   `toml:"log_every" comment:"interval of progress log lines when stderr is not a terminal (e.g. 5s)"`

	Dedup     DedupConfig     `toml:"dedup" comment:"exact and MinHash near-duplicate removal"`
	Decontam  DecontamConfig  `toml:"decontam" comment:"n-gram decontamination against eval sets"`
	Tokenizer TokenizerConfig `toml:"tokenizer" comment:"tokenizer stage: train BPE on kept documents or load one, then write token shards"`
	Report    ReportConfig    `toml:"report" comment:"what report.json and the summary show"`
}

// Source is one input of the corpus. Several entries may share a name (a
// "web" source read from WARC files and from JSONL, say): their documents
// go to the same shards and report line.
type Source struct {
	Name   string   `toml:"name" comment:"source tag used downstream (web, code, math, books …)"`
	Inputs []string `toml:"inputs" comment:"paths or globs; ${KESTREL_DATA} expands to the data directory"`
	Format string   `toml:"format" comment:"jsonl | text | warc | wet | parquet | code"`

	TextField  string   `toml:"text_field" comment:"jsonl/parquet: field holding the text (default text)"`
	IDField    string   `toml:"id_field" comment:"jsonl: field kept as meta.orig_id (default id)"`
	MetaFields []string `toml:"meta_fields" comment:"jsonl: extra top-level fields copied into meta"`

	Split      string `toml:"split" comment:"text: file (one document per file) | blank_lines | separator | heading"`
	Separator  string `toml:"separator" comment:"text: separator line (split = separator) or regexp of heading lines that start a document (split = heading)"`
	GroupBytes int    `toml:"group_bytes" comment:"text: merge consecutive pieces until a document has at least this many bytes (0 = off)"`

	Include      []string `toml:"include" comment:"code: globs of files to read, matched against relative path and base name (empty = all)"`
	Exclude      []string `toml:"exclude" comment:"code: globs of files and directories to skip"`
	MaxFileBytes int64    `toml:"max_file_bytes" comment:"code: skip files larger than this (0 = 1 MiB)"`

	MaxDocs  int64 `toml:"max_docs" comment:"stop reading this source after this many documents (0 = all)"`
	MaxBytes int64 `toml:"max_bytes" comment:"stop reading this source after this many text bytes (0 = all)"`

	Filter  string         `toml:"filter" comment:"quality filter set: web | code | math | books | none (web and books keep English by language ID and reject by compression ratio; code and math do neither)"`
	Filters map[string]any `toml:"filters" comment:"overrides on top of the filter set, as in internal/data/clean (e.g. filters.gopher_quality.min_words = 20, filters.langid.keep = [\"en\", \"de\"], filters.langid.min_confidence = 0.5, filters.compression.min_ratio = 0.2)"`
	Rewrite *bool          `toml:"rewrite" comment:"keep the text as rewritten by the filters (C4 line removal); default true"`
}

// DedupConfig configures the dedup stages.
type DedupConfig struct {
	Exact   bool         `toml:"exact" comment:"drop documents whose normalised text was seen before (first occurrence kept)"`
	Near    bool         `toml:"near" comment:"drop MinHash-LSH near-duplicates (one kept per cluster: the smallest id)"`
	MinHash dedup.Config `toml:"minhash" comment:"MinHash-LSH settings"`
}

// DecontamConfig configures decontamination.
type DecontamConfig struct {
	Enabled      bool            `toml:"enabled" comment:"check documents against the eval sets"`
	MinKeepBytes int             `toml:"min_keep_bytes" comment:"cut mode: drop the document when fewer bytes than this remain"`
	Index        decontam.Config `toml:"index" comment:"eval sets, n-gram size, common n-gram cut-off, drop or cut"`
}

// TokenizerConfig configures the tokenizer and token-shard stage.
type TokenizerConfig struct {
	Mode          string        `toml:"mode" comment:"none = stop after the kept documents; train = learn a byte-level BPE on the kept documents; load = use the tokenizer at path"`
	Path          string        `toml:"path" comment:"load mode: tokenizer.json (or other format tokenizer.Load reads)"`
	VocabSize     int           `toml:"vocab_size" comment:"train mode: vocabulary size"`
	Pattern       string        `toml:"pattern" comment:"train mode: pre-tokenisation pattern: gpt2 | llama3 | a regexp"`
	Special       []string      `toml:"special" comment:"train mode: special tokens (empty = <|endoftext|>)"`
	TrainMaxBytes int64         `toml:"train_max_bytes" comment:"train mode: train on at most this many bytes per source, sampled in document order (0 = all)"`
	Shards        shards.Config `toml:"shards" comment:"token shard settings (shard size, validation fraction, separator)"`
}

// ReportConfig configures the report.
type ReportConfig struct {
	Hotspots    int `toml:"hotspots" comment:"largest duplicate clusters listed"`
	SampleChars int `toml:"sample_chars" comment:"characters of sample text shown per hotspot and overlap"`
	MaxItemIDs  int `toml:"max_item_ids" comment:"matched eval item ids listed per eval set"`
	MaxProblems int `toml:"max_problems" comment:"malformed-input problems listed individually (all are counted)"`
}

// DefaultConfig returns the defaults of the [prepare] section.
func DefaultConfig() Config {
	return Config{
		MaxDocBytes: 8 << 20,
		UTF8:        "repair",
		ShardBytes:  64 << 20,
		LogEvery:    "5s",
		Dedup:       DedupConfig{Exact: true, Near: true, MinHash: dedup.DefaultConfig()},
		Decontam:    DecontamConfig{Enabled: true, MinKeepBytes: 200, Index: decontam.DefaultConfig()},
		Tokenizer:   TokenizerConfig{Mode: "none", VocabSize: 8192, Pattern: "gpt2", Shards: shards.DefaultConfig()},
		Report:      ReportConfig{Hotspots: 10, SampleChars: 240, MaxItemIDs: 20, MaxProblems: 50},
	}
}

// readOptions maps a source to the corpus reader's options.
func (s Source) readOptions(c Config) corpus.Options {
	return corpus.Options{
		Source: s.Name, Format: s.Format,
		TextField: s.TextField, IDField: s.IDField, MetaField: s.MetaFields,
		Split: s.Split, Separator: s.Separator, GroupBytes: s.GroupBytes,
		Include: s.Include, Exclude: s.Exclude, MaxFileBytes: s.MaxFileBytes,
		MaxDocBytes: c.MaxDocBytes, UTF8: c.UTF8,
		DeferHTML: true,
	}
}

// defaultFilters is a kind's filter set (a variable so tests can play a
// binary whose defaults changed).
var defaultFilters = clean.DefaultConfig

// filterConfig is the source's filter set with its overrides applied.
func (s Source) filterConfig() (clean.Config, bool, error) {
	kind := s.Filter
	if kind == "" {
		kind = "web"
	}
	if kind == "none" {
		return clean.Config{}, false, nil
	}
	known := false
	for _, k := range clean.Kinds {
		known = known || k == kind
	}
	if !known {
		return clean.Config{}, false, fmt.Errorf("source %q: filter %q: want one of %v or none", s.Name, kind, clean.Kinds)
	}
	cfg := defaultFilters(kind)
	if err := tomlstrict.Overlay(s.Filters, fmt.Sprintf("source %q: filters", s.Name), &cfg); err != nil {
		return cfg, false, err
	}
	return cfg, true, nil
}

// validate checks the parts of the config prepare uses itself.
func (c Config) validate() error {
	if len(c.Sources) == 0 {
		return fmt.Errorf("prepare: no sources (add [[prepare.sources]] tables)")
	}
	for i, s := range c.Sources {
		if s.Name == "" {
			return fmt.Errorf("prepare.sources[%d]: name is empty", i)
		}
		for _, r := range s.Name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
				return fmt.Errorf("prepare.sources[%d]: name %q: use letters, digits, '-' and '.' only", i, s.Name)
			}
		}
		if len(s.Inputs) == 0 {
			return fmt.Errorf("source %q: no inputs", s.Name)
		}
		if err := s.readOptions(c).Validate(); err != nil {
			return fmt.Errorf("source %q: %w", s.Name, err)
		}
		if _, _, err := s.filterConfig(); err != nil {
			return err
		}
	}
	switch c.Tokenizer.Mode {
	case "", "none", "train", "load":
	default:
		return fmt.Errorf("prepare.tokenizer.mode %q: want none, train or load", c.Tokenizer.Mode)
	}
	if c.Tokenizer.Mode == "load" && c.Tokenizer.Path == "" {
		return fmt.Errorf("prepare.tokenizer.mode = load needs prepare.tokenizer.path")
	}
	if c.ShardBytes <= 0 {
		return fmt.Errorf("prepare.shard_bytes = %d: must be > 0", c.ShardBytes)
	}
	return nil
}

// resolved is cfg with ${KESTREL_DATA} expanded in every path
// (datadir.ResolveAt): prepare's one resolution, at the start of a run
// (resolveAll). Its callers hand it the [prepare] section as the user gave
// it, whose rendering the dataset's fingerprint hashes, so a dataset stays
// up to date when the data directory moves; everything else reads the
// resolved paths.
func resolved(cfg Config) (Config, error) {
	if err := datadir.ResolveAt(&cfg, "prepare"); err != nil {
		return Config{}, fmt.Errorf("prepare: %w", err)
	}
	return cfg, nil
}
