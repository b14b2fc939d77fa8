//go:build linux

package stepclock

import "syscall"

func gettid() int { return syscall.Gettid() }
