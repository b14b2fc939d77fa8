//go:build !unix

package stepclock

// counterFiles reads nothing where there is no getrusage.
type counterFiles struct{}

// read measures nothing.
func (*counterFiles) read() hostCounters { return hostCounters{} }

// close has nothing to close.
func (*counterFiles) close() {}
