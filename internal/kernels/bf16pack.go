package kernels

import "math"

// Packing for the bf16 micro-kernels. Their packed operands hold pairs of
// bfloat16 of consecutive k in one 32-bit slot (of a []float32 buffer),
// element 2q in the low half and 2q+1 in the high half, as VDPBF16PS and
// AMX's TDPBF16PS read them: the layouts are packA's and packBStrip's with
// k counted in pairs (kdepth), each value rounded to nearest even while it
// is packed. An odd k's last pair has a zero high half.

// bf16Pair is the slot holding x (low half) and y (high half) rounded to
// bf16.
func bf16Pair(x, y float32) float32 {
	return math.Float32frombits(uint32(BF16Bits(x)) | uint32(BF16Bits(y))<<16)
}

// cvtRowBF16 sets dst[i] = bf16Pair(src[2i], src[2i+1]) for i <
// (len(src)+1)/2, with 0 for a missing src[2i+1]; kn.cvtRow does what it
// can first.
func cvtRowBF16(kn *gemmKernel, dst, src []float32) {
	done := 0
	if kn.cvtRow != nil {
		done = kn.cvtRow(dst, src)
	}
	n := len(src)
	for p := done; p+1 < n; p += 2 {
		dst[p/2] = bf16Pair(src[p], src[p+1])
	}
	if n%2 == 1 && done < n {
		dst[n/2] = bf16Pair(src[n-1], 0)
	}
}

// packABF16 is packA for a bf16 kernel: rows i0..i0+mc, columns p0..p0+kc
// of op(A) as pairs. op(A) = A: each row converted in place order (rs =
// row stride, cs = 1); op(A) = Aᵀ: k-major strips (rs = 1, cs =
// kmajorStride(mr)), each pair step taking two rows of A. Rows past mc in
// the last strip are zero.
func packABF16(kn *gemmKernel, trans bool, a []float32, lda, i0, p0, mc, kc int, dst []float32) (rs, cs, sstride int) {
	mr, kp, kd := kn.mr, (kc+1)/2, kn.kdepth(kc)
	strips := (mc + mr - 1) / mr
	if !trans || kn.aRows {
		ld := packedARows(kd)
		if trans {
			packATRowsBF16(a, lda, i0, p0, mc, kc, ld, dst)
		} else {
			for i := 0; i < mc; i++ {
				cvtRowBF16(kn, dst[i*ld:i*ld+kp], a[(i0+i)*lda+p0:][:kc])
			}
		}
		for i := 0; i < mc; i++ {
			clear(dst[i*ld+kp : i*ld+kd])
		}
		for i := mc; i < strips*mr; i++ {
			clear(dst[i*ld : i*ld+kd])
		}
		return ld, 1, mr * ld
	}
	full := mc / mr
	cs = kmajorStride(mr)
	ss := cs * kp
	first := 0 // the first strip left to the loop below
	if kn.packAT != nil && full > 0 && kn.packAT(dst, a, lda, i0, p0, full, kc, ss) {
		first = full
	}
	if first == strips {
		return 1, cs, ss
	}
	for q := 0; q < kp; q++ {
		r0 := a[(p0+2*q)*lda+i0:][:mc]
		var r1 []float32
		if 2*q+1 < kc {
			r1 = a[(p0+2*q+1)*lda+i0:][:mc]
		}
		for s := first; s < strips; s++ {
			d := dst[s*ss+q*cs : s*ss+q*cs+mr]
			for i := range d {
				row := s*mr + i
				switch {
				case row >= mc:
					d[i] = 0
				case r1 == nil:
					d[i] = bf16Pair(r0[row], 0)
				default:
					d[i] = bf16Pair(r0[row], r1[row])
				}
			}
		}
	}
	return 1, cs, ss
}

// packATRowsBF16 packs rows i0..i0+mc, depth p0..p0+kc of op(A) = Aᵀ as
// rows of pairs ld words apart (pair q of row i at dst[i·ld+q]), for a
// kernel that reads A by rows (aRows): a transpose, two rows of A (two
// consecutive k) at a time.
func packATRowsBF16(a []float32, lda, i0, p0, mc, kc, ld int, dst []float32) {
	for q := 0; q < (kc+1)/2; q++ {
		r0 := a[(p0+2*q)*lda+i0:][:mc]
		if 2*q+1 < kc {
			r1 := a[(p0+2*q+1)*lda+i0:][:mc]
			for i, x := range r0 {
				dst[i*ld+q] = bf16Pair(x, r1[i])
			}
		} else {
			for i, x := range r0 {
				dst[i*ld+q] = bf16Pair(x, 0)
			}
		}
	}
}

// packBStripBF16 is packBStrip for a bf16 kernel: dst[q·nr + j] holds
// op(B)[p0+2q, j0+j] and op(B)[p0+2q+1, j0+j] for q < (kc+1)/2, zero past
// cols (and past kc, up to kdepth(kc) pairs).
func packBStripBF16(kn *gemmKernel, trans bool, b []float32, ldb, p0, j0, kc, cols int, dst []float32) {
	nr, kp := kn.nr, (kc+1)/2
	clear(dst[kp*nr : kn.kdepth(kc)*nr])
	d := dst[:kp*nr]
	if !trans {
		full := kc / 2 // whole pairs
		first := 0
		if cols == nr && kn.packBN != nil && full > 0 && kn.packBN(d, b, ldb, p0, j0, 2*full) {
			first = full
		}
		for q := first; q < kp; q++ {
			r0 := b[(p0+2*q)*ldb+j0:][:cols]
			dq := d[q*nr : q*nr+nr]
			if 2*q+1 < kc {
				r1 := b[(p0+2*q+1)*ldb+j0:][:cols]
				for j, x := range r0 {
					dq[j] = bf16Pair(x, r1[j])
				}
			} else {
				for j, x := range r0 {
					dq[j] = bf16Pair(x, 0)
				}
			}
			clear(dq[cols:])
		}
		return
	}
	// op(B)[p,j] = b[j·ldb+p]: row j of b holds column j, already in pair order
	if cols == nr && kn.packBT != nil && kn.packBT(d, b, ldb, p0, j0, kc) {
		return
	}
	var row [64]float32
	for j := 0; j < cols; j++ {
		src := b[(j0+j)*ldb+p0:][:kc]
		for q0 := 0; q0 < kp; q0 += len(row) {
			part := row[:min(len(row), kp-q0)]
			cvtRowBF16(kn, part, src[2*q0:min(kc, 2*(q0+len(row)))])
			for i, v := range part {
				d[(q0+i)*nr+j] = v
			}
		}
	}
	if cols < nr {
		for q := 0; q < kp; q++ {
			clear(d[q*nr+cols : q*nr+nr])
		}
	}
}
