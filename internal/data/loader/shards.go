package loader

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// FromShards wraps a dataset written by kestrel prepare (internal/data/shards)
// as the loader's Dataset: one Source per source tag, with its train and
// val streams (a shards.Stream is a TokenStream as it is).
func FromShards(d *shards.Dataset) (*Dataset, error) {
	out := &Dataset{Name: d.Dir(), Hash: d.Hash()}
	for _, name := range d.Sources() {
		tr, err := d.Stream(name, shards.Train)
		if err != nil {
			return nil, fmt.Errorf("loader: %w", err)
		}
		va, err := d.Stream(name, shards.Val)
		if err != nil {
			return nil, fmt.Errorf("loader: %w", err)
		}
		src := Source{Name: name, Train: tr, Val: va}
		var off int64
		for _, sh := range d.Shards(name, shards.Train) {
			src.TrainShards = append(src.TrainShards, ShardSpan{File: sh.File, Start: off, End: off + sh.Tokens})
			off += sh.Tokens
		}
		out.Sources = append(out.Sources, src)
	}
	if len(out.Sources) == 0 {
		return nil, fmt.Errorf("loader: dataset %s has no sources", d.Dir())
	}
	return out, nil
}

// The shards stream is what the loader reads.
var _ TokenStream = (*shards.Stream)(nil)
