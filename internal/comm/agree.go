package comm

import (
	"fmt"
	"strings"
)

// StartError is another rank's start-up refusal, as AgreeToStart returns it
// on the ranks that were ready to start.
type StartError struct {
	Rank int    // the rank that refused (the lowest, when several did)
	Host string // its host
	Msg  string // its error
}

// Error names the rank, its host and its reason.
func (e *StartError) Error() string {
	return fmt.Sprintf("rank %d on %s refused to start: %s", e.Rank, e.Host, e.Msg)
}

// AgreeToStart is a group's start-up handshake: every rank passes its own
// verdict (nil: ready) and all of them learn together whether to go on,
// through one AllGatherBytes. It returns nil on every rank when all are
// ready. Otherwise it returns on every rank at once: the refusing rank its
// own err, the others a *StartError with the lowest refusing rank's message
// (a run directory lock held by another job reaches every rank of this one
// in the time of one collective, instead of leaving the ready ranks waiting
// in the next collective until the timeout). An error of the exchange
// itself is returned wrapped.
func AgreeToStart(c Comm, err error) error {
	var mine []byte // empty: ready; else 1, the host, 0, the message
	if err != nil {
		mine = append(append(append([]byte{1}, c.Host()...), 0), err.Error()...)
	}
	all, gerr := c.AllGatherBytes(mine)
	if gerr != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("comm: rank %d: start-up handshake: %w", c.Rank(), gerr)
	}
	if err != nil {
		return err
	}
	for r, v := range all {
		if len(v) > 0 {
			host, msg, _ := strings.Cut(string(v[1:]), "\x00")
			return &StartError{Rank: r, Host: host, Msg: msg}
		}
	}
	return nil
}
