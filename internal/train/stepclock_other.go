//go:build !unix

package train

// readHostCounters measures nothing where there is no getrusage.
func readHostCounters() hostCounters { return hostCounters{} }
