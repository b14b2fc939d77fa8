package dashboard

import (
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// BenchmarkPanelLoad100k measures the dashboard's API on a run of 100,000
// steps × ~50 metrics: "cold" includes reading and parsing metrics.jsonl the
// first time; "panel" is one panel's request (4 metrics, 1,000 points) on a
// loaded run, as the page makes while it is open.
func BenchmarkPanelLoad100k(b *testing.B) {
	dir := writeRun(b, filepath.Join(b.TempDir(), "big"), 100000, 50, 50000)
	q := "/api/metrics?run=big&x=step&max_points=1000&names=train_loss_raw,train_loss_ema,grad_global_norm,update_norm"
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			srv, err := New("", []string{dir})
			if err != nil {
				b.Fatal(err)
			}
			serve(b, srv, q)
		}
	})
	b.Run("panel", func(b *testing.B) {
		srv, err := New("", []string{dir})
		if err != nil {
			b.Fatal(err)
		}
		serve(b, srv, q)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			serve(b, srv, q)
		}
	})
	b.Run("all50", func(b *testing.B) {
		srv, err := New("", []string{dir})
		if err != nil {
			b.Fatal(err)
		}
		serve(b, srv, q)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			serve(b, srv, "/api/metrics?run=big&x=tokens&max_points=1000")
		}
	})
}

func serve(b *testing.B, srv *Server, q string) {
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", q, nil))
	if rec.Code != 200 {
		b.Fatalf("%s: %d %s", q, rec.Code, rec.Body.String())
	}
	_, _ = io.Copy(io.Discard, rec.Body)
}
