package kernels

import (
	"fmt"
	"syscall"
)

// requestAMX asks Linux (5.16 and later) for permission to use the AMX
// tile data state: arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023,
// XFEATURE_XTILEDATA = 18). The permission is the whole process's, for
// every thread now and later. The kernel refuses it (ENOSPC) when a
// thread's signal stack could not hold the larger signal frame; Go's are
// 32 KiB, above the ~11 KiB that needs.
func requestAMX() error {
	const archReqXcompPerm, xfeatureXTileData = 0x1023, 18
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXTileData, 0); e != 0 {
		return fmt.Errorf("arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): %w", e)
	}
	return nil
}
