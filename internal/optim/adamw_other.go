//go:build !amd64

package optim

// useAVX512 is false off amd64: the Go loops run.
var useAVX512 = false

func sumSquares(x []float32, acc float64) float64 { return sumSquaresGo(x, acc) }

func sumSquares8(x *[8][]float32, acc *[8]float64) bool { return false }

func adamDir(mode int, g, m, v, p []float32, k *adamConsts, acc *[6]float64) {
	adamDirGo(mode, g, m, v, p, k, acc)
}

func adamCommit(g, m, v, p []float32, k *adamConsts) { adamCommitGo(g, m, v, p, k) }

func adamDirStore(mode int, g, m, v, p, m2, v2, u []float32, k *adamConsts, acc *[6]float64) {
	adamDirStoreGo(mode, g, m, v, p, m2, v2, u, k, acc)
}

func thetaUpdate(p, u []float32, step float64) { thetaGo(p, u, step) }

func thetaEMAUpdate(p, u, w []float32, step, b, c float64) { thetaEMAGo(p, u, w, step, b, c) }
