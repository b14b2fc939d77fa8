package faults

import (
	"encoding/base64"
	"encoding/binary"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
)

// Base64 reports whether the batch of the 1-based data step ds is
// replaced by random base64 text (base64_data_at_step, base64_data_steps).
func (d Config) Base64(ds int) bool {
	return ds > 0 && d.Base64DataAtStep > 0 && ds >= d.Base64DataAtStep && ds < d.Base64DataAtStep+max(d.Base64DataSteps, 1)
}

// Base64Rows overwrites rows r0… of a base64 data step's batch (inputs and
// targets, T tokens a row) with the tokens of random base64 text, encoded
// by encode (the run's tokenizer): each row a window of T+1 tokens of its
// own text, a pure function of (seed, data step, row), so a replay and
// any split into micro-batches rebuild it.
func Base64Rows(seed uint64, ds, r0, T int, encode func(string) []int32, in, tg []int32) {
	for r := 0; r < len(in)/T; r++ {
		toks := base64Tokens(seed, ds, r0+r, T+1, encode)
		copy(in[r*T:(r+1)*T], toks[:T])
		copy(tg[r*T:(r+1)*T], toks[1:T+1])
	}
}

// base64Tokens encodes random base64 text of row until it holds n tokens
// (text of 4 characters a token at first, twice as long at each try; an
// encoder that still gives too few after 6 tries has its tokens repeated).
func base64Tokens(seed uint64, ds, row, n int, encode func(string) []int32) []int32 {
	raw := make([]byte, 0, 3*n)
	var toks []int32
	for try, size := 0, 3*n; try < 6; try, size = try+1, size*2 {
		for i := len(raw) / 8; len(raw) < size; i++ {
			raw = binary.LittleEndian.AppendUint64(raw, datasrc.Mix3(seed^0xba5e64, uint64(ds), uint64(row)<<24|uint64(i)))
		}
		if toks = encode(base64.StdEncoding.EncodeToString(raw)); len(toks) >= n {
			return toks[:n]
		}
	}
	out := make([]int32, n)
	for i := range out {
		if len(toks) > 0 {
			out[i] = toks[i%len(toks)]
		}
	}
	return out
}
