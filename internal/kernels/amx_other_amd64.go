//go:build !linux

package kernels

import (
	"errors"
	"runtime"
)

// requestAMX: only Linux's request for the tile state is implemented.
func requestAMX() error {
	return errors.New("AMX tile state is requested only on Linux, this is " + runtime.GOOS)
}
