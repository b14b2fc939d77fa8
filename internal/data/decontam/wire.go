package decontam

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// wireIndex is the encoded form of an Index (exported fields for gob).
type wireIndex struct {
	Cfg     Config
	Sets    []int
	IDs     []string
	Post    map[uint64]int32
	Multi   [][]int32
	Bits    []uint64
	BitMask uint64
	Stats   []SetStats
}

// MarshalBinary encodes the built index so that a distributed prepare
// builds it once and broadcasts it (UnmarshalIndex reads it back).
func (x *Index) MarshalBinary() ([]byte, error) {
	w := wireIndex{Cfg: x.cfg, Post: x.post, Multi: x.multi, Bits: x.bits, BitMask: x.bitMask, Stats: x.stats}
	for _, it := range x.items {
		w.Sets = append(w.Sets, it.set)
		w.IDs = append(w.IDs, it.id)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(w); err != nil {
		return nil, fmt.Errorf("decontam: encode index: %w", err)
	}
	return b.Bytes(), nil
}

// UnmarshalIndex decodes an index encoded by MarshalBinary.
func UnmarshalIndex(b []byte) (*Index, error) {
	var w wireIndex
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return nil, fmt.Errorf("decontam: decode index: %w", err)
	}
	if len(w.Sets) != len(w.IDs) || len(w.Bits) == 0 || uint64(len(w.Bits))*64 != w.BitMask+1 {
		return nil, fmt.Errorf("decontam: decode index: inconsistent (%d sets, %d ids, %d bit words, mask %#x)", len(w.Sets), len(w.IDs), len(w.Bits), w.BitMask)
	}
	x := &Index{cfg: w.Cfg, post: w.Post, multi: w.Multi, bits: w.Bits, bitMask: w.BitMask, stats: w.Stats}
	if x.post == nil {
		x.post = map[uint64]int32{}
	}
	for i := range w.Sets {
		x.items = append(x.items, item{set: w.Sets[i], id: w.IDs[i]})
	}
	x.pool.New = func() any { return &scratch{} }
	return x, nil
}
