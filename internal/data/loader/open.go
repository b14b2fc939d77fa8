package loader

import (
	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// Open opens a directory written by kestrel prepare as the loader's
// Dataset, checking its manifest (shard hashes are verified on first read),
// and returns the vocabulary size of the dataset's tokenizer.
// path is resolved (config.Resolve): ${KESTREL_DATA} is not expanded here.
func Open(path string) (*Dataset, int, error) {
	sd, err := shards.Open(path)
	if err != nil {
		return nil, 0, err
	}
	ds, err := FromShards(sd)
	if err != nil {
		return nil, 0, err
	}
	return ds, sd.Manifest().Tokenizer.VocabSize, nil
}
