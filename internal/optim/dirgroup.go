package optim

import "math"

// dirStream is one stream of a four-stream pass-1 kernel (dir4Func): the
// current element of a segment's gradient, moments and θ, the segment's
// weight decay, and the running sums un, pn (the chunk's), sm, sv, su, sp
// (the segment's; two lanes unused). The assembly reads it at fixed
// offsets: keep the field order.
type dirStream struct {
	g, m, v, p *float32
	wd         float64
	acc        [8]float64 // un, pn, sm, sv, su, sp, -, -
}

// dir4Func runs pass 1 (adamDirGo) over n elements of each of four
// streams side by side, n a positive multiple of 8: four independent
// float64 sum chains in flight, each added in its stream's element order.
type dir4Func func(s *[4]dirStream, n int, k *adamConsts)

// dirCursor walks the segments of one chunk for dirGroup.
type dirCursor struct {
	c       int   // the chunk
	segs    []seg // its segments
	si, pos int   // the current segment and the position in it
	live    bool
}

// left is the number of elements of the current segment not yet summed.
func (cu *dirCursor) left() int {
	sg := cu.segs[cu.si]
	return sg.hi - sg.lo - cu.pos
}

// dirGroup is pass 1 over the four chunks c0 … c0+3 (fewer at the end),
// one chunk a stream of the four-stream kernel d4: the streams run in
// pieces cut at every segment end of any of them, the last < 8 elements
// of a segment by the Go loop. Each chunk's sums are the per-chunk loop's
// (dirPass without d4) to the bit: the same terms, added in the same
// order, only the four chains interleaved.
func (o *AdamW) dirGroup(c0 int, params, grads []float32, k *adamConsts, d4 dir4Func, wdScale float64, tel bool) {
	var st [4]dirStream
	var cu [4]dirCursor
	for i := range cu {
		if c := c0 + i; c < len(o.chunks) {
			cu[i] = dirCursor{c: c, segs: o.chunks[c], live: true}
			o.enterSeg(&cu[i], &st[i], params, tel)
		}
	}
	for {
		n, live := math.MaxInt, -1
		for i := range cu {
			for cu[i].live && cu[i].left() < 8 {
				o.finishSeg(&cu[i], &st[i], params, grads, k, wdScale, tel)
			}
			if cu[i].live {
				n, live = min(n, cu[i].left()), i
			}
		}
		if live < 0 {
			return
		}
		for i := range cu {
			if cu[i].live {
				sg := cu[i].segs[cu[i].si]
				lo, hi := sg.lo+cu[i].pos, sg.hi
				s := &st[i]
				s.g, s.m, s.v, s.p = &grads[lo:hi][0], &o.M[lo:hi][0], &o.V[lo:hi][0], &params[lo:hi][0]
				s.wd = sg.wd * wdScale
			}
		}
		for i := range cu {
			if !cu[i].live { // a spent stream runs a live one's elements again, its sums unused
				st[i].g, st[i].m, st[i].v, st[i].p, st[i].wd = st[live].g, st[live].m, st[live].v, st[live].p, st[live].wd
			}
		}
		n &^= 7
		d4(&st, n, k)
		for i := range cu {
			if cu[i].live {
				cu[i].pos += n
			}
		}
	}
}

// enterSeg starts the cursor's current segment: its own sums at zero,
// Muon segments (summed by muonSums) and empty ones taken at once, the
// chunk's sums stored when it has no segment left.
func (o *AdamW) enterSeg(cu *dirCursor, s *dirStream, params []float32, tel bool) {
	for ; cu.si < len(cu.segs); cu.si++ {
		sg := cu.segs[cu.si]
		if sg.muon {
			su, sp, sm := o.muonSums(sg, params)
			s.acc[0] += su
			s.acc[1] += sp
			if tel {
				o.segPart[4*sg.idx], o.segPart[4*sg.idx+1], o.segPart[4*sg.idx+2], o.segPart[4*sg.idx+3] = su, sp, sm, 0
			}
			continue
		}
		cu.pos = 0
		s.acc[2], s.acc[3], s.acc[4], s.acc[5] = 0, 0, 0, 0
		return
	}
	o.part[3*cu.c+1], o.part[3*cu.c+2] = s.acc[0], s.acc[1]
	cu.live = false
}

// finishSeg sums the last elements of the cursor's segment with the Go
// loop, stores the segment's sums and moves to the next segment.
func (o *AdamW) finishSeg(cu *dirCursor, s *dirStream, params, grads []float32, k *adamConsts, wdScale float64, tel bool) {
	sg := cu.segs[cu.si]
	lo := sg.lo + cu.pos
	kc := *k
	kc.wd = sg.wd * wdScale
	a := [6]float64{s.acc[0], s.acc[1], s.acc[4], s.acc[5], s.acc[2], s.acc[3]}
	adamDirGo(dirTelSeg, grads[lo:sg.hi], o.M[lo:sg.hi], o.V[lo:sg.hi], params[lo:sg.hi], &kc, &a)
	s.acc[0], s.acc[1], s.acc[4], s.acc[5], s.acc[2], s.acc[3] = a[0], a[1], a[2], a[3], a[4], a[5]
	if tel {
		o.segPart[4*sg.idx], o.segPart[4*sg.idx+1], o.segPart[4*sg.idx+2], o.segPart[4*sg.idx+3] = a[2], a[3], a[4], a[5]
	}
	cu.si++
	o.enterSeg(cu, s, params, tel)
}
