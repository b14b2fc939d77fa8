package loader

import "fmt"

// PadTarget marks a target position that carries no loss (padding in BOS
// mode). Trainers turn targets < 0 into a zero loss weight.
const PadTarget int32 = -1

// packer cuts sequences of T+1 tokens out of a token stream.
//
// concat: slot i is tokens [i·T, i·T+T+1) (windows overlap by the one token
// that is the last target of i and the first input of i+1), so a stream of L
// tokens has ⌊(L−1)/T⌋ slots. Segment ids count the document starts inside
// the window: position p gets the number of documents that start in
// (i·T, i·T+p], so attention can be masked to the current document.
//
// bos: slot i is document i. The row holds its first min(len−1, T) tokens
// as inputs and the tokens after them as targets, all inside the document
// (with kestrel prepare's eos separator the document's last token is the
// end-of-text, so the model still learns where documents end); longer
// documents are truncated. In a shorter row the document's last token is
// an input with target PadTarget, and the rest is padding: input 0, target
// PadTarget, segment id 1.
type packer struct {
	mode string
	t    int
}

// slots is the number of sequences the stream yields.
func (p packer) slots(s TokenStream) int64 {
	if s == nil {
		return 0
	}
	if p.mode == PackBOS {
		return s.NumDocs()
	}
	n := s.Len() - 1
	if n < int64(p.t) {
		return 0
	}
	return n / int64(p.t)
}

// span is the token range a slot covers in its stream.
func (p packer) span(s TokenStream, slot int64) (off int64, n int) {
	if p.mode == PackBOS {
		off = s.DocStart(slot)
		end := docEnd(s, slot)
		if end-off > int64(p.t+1) {
			end = off + int64(p.t+1)
		}
		return off, int(end - off)
	}
	return slot * int64(p.t), p.t + 1
}

// fill writes one row (T inputs, T targets, optional T segment ids) for
// slot of s; buf holds T+1 tokens of scratch. It returns the number of
// padded positions.
func (p packer) fill(s TokenStream, slot int64, inputs, targets, segs, buf []int32) (pad int, err error) {
	t := p.t
	off, n := p.span(s, slot)
	if err := s.ReadAt(buf[:n], off); err != nil {
		return 0, fmt.Errorf("slot %d (tokens %d..%d): %w", slot, off, off+int64(n), err)
	}
	nt := n - 1 // positions with a target
	if nt < 0 {
		nt = 0
	}
	copy(inputs, buf[:min(n, t)])
	if n > 0 {
		copy(targets, buf[1:n])
	}
	if p.mode == PackBOS && nt < t {
		for i := n; i < t; i++ {
			inputs[i] = 0
		}
		for i := nt; i < t; i++ {
			targets[i] = PadTarget
		}
		pad = t - nt
	}
	if segs == nil {
		return pad, nil
	}
	if p.mode == PackBOS {
		for i := 0; i < t; i++ {
			segs[i] = 0
			if i >= n {
				segs[i] = 1
			}
		}
		return pad, nil
	}
	// concat: walk the document starts inside (off, off+T)
	d := docAt(s, off) + 1
	nd := s.NumDocs()
	next := int64(-1)
	if d < nd {
		next = s.DocStart(d)
	}
	seg := int32(0)
	for i := 0; i < t; i++ {
		pos := off + int64(i)
		for next >= 0 && next <= pos {
			seg++
			d++
			next = -1
			if d < nd {
				next = s.DocStart(d)
			}
		}
		segs[i] = seg
	}
	return 0, nil
}

// docsIn lists the documents a slot's inputs touch: for each, the row
// position where its part starts and its token offset inside the document.
func (p packer) docsIn(s TokenStream, slot int64) []DocSpan {
	off, n := p.span(s, slot)
	if n > p.t {
		n = p.t
	}
	var out []DocSpan
	ider, _ := s.(DocIDer)
	for d := docAt(s, off); d < s.NumDocs(); d++ {
		start := s.DocStart(d)
		if start >= off+int64(n) {
			break
		}
		pos := int(start - off)
		inDoc := int64(0)
		if pos < 0 {
			inDoc = off - start
			pos = 0
		}
		sp := DocSpan{Doc: d, RowPos: pos, DocOffset: inDoc}
		if ider != nil {
			sp.ID = ider.DocID(d)
		}
		out = append(out, sp)
		if p.mode == PackBOS {
			break
		}
	}
	return out
}
