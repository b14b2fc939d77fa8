//go:build !linux

package kernels

func adviseHugePages([]float32) {}
