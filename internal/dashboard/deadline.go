package dashboard

import (
	"net/http"
	"time"
)

// writeDeadlines drops a client that stops reading: before every write of a
// response the connection's write deadline is moved to writeIdle from now,
// so a write that cannot hand data to the client for that long fails and
// the handler returns. A slow client that keeps reading is served however
// long the response takes, and a quiet event stream (/api/stream writes
// only when the run grows) is not cut. Handlers release every lock before
// writing, so a stalled client only ever holds its own connection.
func (s *Server) writeDeadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: s.writeIdle}
		h.ServeHTTP(dw, req)
		// The server flushes what is buffered after the handler returns.
		dw.extend()
	})
}

// deadlineWriter is a ResponseWriter that moves the write deadline before
// each write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (w *deadlineWriter) extend() {
	if w.idle > 0 {
		// ErrNotSupported (a recorder, not a connection) leaves no deadline.
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	}
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// FlushError flushes buffered data to the client under a fresh deadline;
// http.ResponseController.Flush calls it.
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
