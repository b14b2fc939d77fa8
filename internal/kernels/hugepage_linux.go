package kernels

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHugePages asks Linux to back the 2 MiB-aligned interior of buf
// with transparent huge pages (madvise MADV_HUGEPAGE; with the common
// "madvise" THP setting nothing else gets them). It is advice: an error
// (an old kernel, THP disabled) leaves the buffer on ordinary pages.
func adviseHugePages(buf []float32) {
	if len(buf) == 0 {
		return
	}
	const huge = 2 << 20
	p := uintptr(unsafe.Pointer(&buf[0]))
	end := p + uintptr(len(buf))*4
	s, e := (p+huge-1)&^(huge-1), end&^(huge-1)
	if e <= s {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Pointer(s)), e-s), unix.MADV_HUGEPAGE)
}
