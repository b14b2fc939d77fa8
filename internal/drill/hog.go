package drill

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// startHog starts one busy process per core (a shell loop: other work on
// the machine, outside kestrel's process, as a neighbour would be) and
// returns the function that stops them.
func startHog() (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for i := 0; i < runtime.NumCPU(); i++ {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("drill: CPU hog: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// hogFrom is an observer that starts the hog after step, for the rest of
// the branch; stop ends it.
type hogFrom struct {
	step int
	kill func()
	err  error
}

func (h *hogFrom) OnStep(sm *runlog.Step) error {
	if sm.Step >= h.step && h.kill == nil && h.err == nil {
		h.kill, h.err = startHog()
		return h.err
	}
	return nil
}
func (h *hogFrom) OnEval(*runlog.Eval) error             { return nil }
func (h *hogFrom) OnCheckpoint(*runlog.Checkpoint) error { return nil }

func (h *hogFrom) stop() {
	if h.kill != nil {
		h.kill()
	}
}
