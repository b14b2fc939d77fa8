package train

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// eventLog records the order of the loop's calls.
type eventLog struct{ ev []string }

func (l *eventLog) add(format string, a ...any) { l.ev = append(l.ev, fmt.Sprintf(format, a...)) }

// startObserver implements StepStarter beside Observer.
type startObserver struct{ l *eventLog }

func (o startObserver) OnStepStart(step int)                  { o.l.add("start %d", step) }
func (o startObserver) OnStep(m *runlog.Step) error           { o.l.add("end %d", m.Step); return nil }
func (o startObserver) OnEval(e *runlog.Eval) error           { o.l.add("eval %d", e.Step); return nil }
func (o startObserver) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// fillLog records each Fill (its 1-based step).
type fillLog struct {
	datasrc.Source
	l *eventLog
}

func (f fillLog) Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error {
	if row0 == 0 {
		f.l.add("fill %d", step+1)
	}
	return f.Source.Fill(step, batch, row0, n, inputs, targets, segIDs, srcs)
}

// TestStepStartSignal: an observer implementing StepStarter hears each
// step begin before its batch is filled, and the step end after; the
// evaluation runs outside that window. Observers without the method still
// work (stopAt).
func TestStepStartSignal(t *testing.T) {
	o := baseOpts(t.TempDir())
	o.Train.Steps, o.Train.EvalEvery = 4, 2
	var l eventLog
	o.Data = fillLog{o.Data, &l}
	o.Observers = []Observer{stopAt{step: 100}, startObserver{&l}}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(l.ev, ", ")
	want := "start 1, fill 1, end 1, start 2, fill 2, end 2, eval 2, start 3, fill 3, end 3, start 4, fill 4, end 4, eval 4"
	if got != want {
		t.Errorf("calls\n got %s\nwant %s", got, want)
	}
}
