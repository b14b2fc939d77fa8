//go:build !unix

package dashboard

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
