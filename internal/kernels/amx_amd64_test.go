package kernels

import (
	"fmt"
	"slices"
	"testing"
)

// BenchmarkAMXTileConfig times the TDPBF16PS probe per call for a few
// iteration counts: at n = 1 the call is mostly LDTILECFG + TILERELEASE
// (what one tile configuration costs), at n = 16,384 the loop's peak.
func BenchmarkAMXTileConfig(b *testing.B) {
	if !slices.Contains(BF16ImplsAvailable(), "amx") {
		b.Skip("no AMX-BF16 here")
	}
	for _, n := range []int{1, 8, 1 << 14} {
		b.Run(fmt.Sprintf("n%d", n), func(b *testing.B) {
			for range b.N {
				tdpbf16Loopamx(n)
			}
			b.ReportMetric(float64(n)*65536*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
