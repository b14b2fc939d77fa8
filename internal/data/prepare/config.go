// Package prepare runs the data pipeline behind `kestrel prepare`: read
// sources, filter, deduplicate, decontaminate, tokenize and shard, keeping a
// reason for every rejected document.
package prepare

// Config is the [prepare] section of a data config.
type Config struct {
	Sources []Source `toml:"sources" comment:"input sources; each becomes a source tag downstream"`
}

// Source is one input of the corpus.
type Source struct {
	Name   string   `toml:"name" comment:"source tag used downstream (web, code, math, books …)"`
	Inputs []string `toml:"inputs" comment:"paths or globs; ${KESTREL_DATA} expands to the data directory"`
	Format string   `toml:"format" comment:"jsonl | text | warc | wet | parquet | code"`
}

// DefaultConfig returns the defaults of the [prepare] section.
func DefaultConfig() Config { return Config{} }
