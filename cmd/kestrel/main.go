// Command kestrel pre-trains small language models end to end on CPU and
// monitors them: prepare data, train a tokenizer, train a transformer, watch
// its vitals and alerts, and read its curves in a live dashboard.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// One log format for every package (slog.Default included).
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kestrel:", err)
		var ec exitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

// exitCoder is an error that carries its own process exit status.
type exitCoder interface{ ExitCode() int }
