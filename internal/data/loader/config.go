// Package loader turns token sources into batches: mixture by source with
// stages, Feistel (or LCG) permutation, packing with document boundaries,
// and batch(step) as a pure function of (dataset, config, seed, step).
package loader

// Config is the [data] section of a run config.
type Config struct {
	Kind  string `toml:"kind" comment:"bytes = train on a plain text file at byte level (vocab 256); dataset = a directory made by kestrel prepare"`
	Train string `toml:"train" comment:"bytes mode: training text file"`
	Val   string `toml:"val" comment:"bytes mode: validation text file (empty = hold out val_fraction of train)"`
	Path  string `toml:"path" comment:"dataset mode: directory written by kestrel prepare"`
}

// DefaultConfig returns the defaults of the [data] section.
func DefaultConfig() Config {
	return Config{Kind: "bytes", Train: "${KESTREL_DATA}/tinyshakespeare/input.txt"}
}
