//go:build unix

package dashboard

import "syscall"

// mkfifo makes a named pipe (opening one for reading waits for a writer).
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
