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
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*4)
	p := uintptr(unsafe.Pointer(&b[0]))
	s := int((p+huge-1)&^(huge-1) - p)
	e := int((p+uintptr(len(b)))&^(huge-1) - p)
	if e <= s {
		return
	}
	_ = unix.Madvise(b[s:e], unix.MADV_HUGEPAGE)
}
