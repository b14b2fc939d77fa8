package train

import (
	"strconv"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// opRecorder is the model.OpTracer of a traced step: it appends each op's
// span to the step's OpSpans, named "layer<L>/<op>" inside a block.
type opRecorder struct {
	spans *[]runlog.Span
	open  []int // indexes of the open spans, innermost last
}

// Begin implements model.OpTracer.
func (r *opRecorder) Begin(op string, layer int) {
	name := op
	if layer >= 0 {
		name = "layer" + strconv.Itoa(layer) + "/" + op
	}
	*r.spans = append(*r.spans, runlog.Span{Name: name, Start: time.Now()})
	r.open = append(r.open, len(*r.spans)-1)
}

// End implements model.OpTracer.
func (r *opRecorder) End() {
	n := len(r.open)
	if n == 0 {
		return
	}
	sp := &(*r.spans)[r.open[n-1]]
	sp.Dur = time.Since(sp.Start)
	r.open = r.open[:n-1]
}
