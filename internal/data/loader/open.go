package loader

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// Open opens a directory written by kestrel prepare as the loader's
// Dataset, checking its manifest (shard hashes are verified on first read),
// and returns the vocabulary size of the dataset's tokenizer.
// ${KESTREL_DATA} in path expands to the shipped data directory.
func Open(path string) (*Dataset, int, error) {
	p, err := datadir.Expand(path)
	if err != nil {
		return nil, 0, fmt.Errorf("dataset %s: %w", path, err)
	}
	sd, err := shards.Open(p)
	if err != nil {
		return nil, 0, err
	}
	ds, err := FromShards(sd)
	if err != nil {
		return nil, 0, err
	}
	return ds, sd.Manifest().Tokenizer.VocabSize, nil
}
