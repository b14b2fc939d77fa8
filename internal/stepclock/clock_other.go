//go:build !unix

package stepclock

// readHostCounters measures nothing where there is no getrusage.
func readHostCounters() hostCounters { return hostCounters{} }
