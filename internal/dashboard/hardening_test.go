package dashboard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunFilesStayInsideRun: every file a request makes the server read
// (config, manifest, data report, metrics, alerts, checkpoints, report and
// event files) is read only when it resolves inside the run directory; a
// symlink out of the run and a config's data.path pointing anywhere on disk
// are refused, and links that stay inside still work.
func TestRunFilesStayInsideRun(t *testing.T) {
	const secret = "top secret"
	secretJSON := `{"secret":"` + secret + `"}`
	type env struct{ root, run string }
	link := func(t *testing.T, target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(name)
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	write := func(t *testing.T, name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, e env)
		urls    []string // none may answer with the secret
		problem string   // /api/run must list a problem containing this
		want    string   // /api/run must contain this (links inside the run work)
	}{
		{name: "config.toml links out (absolute)", setup: func(t *testing.T, e env) {
			link(t, filepath.Join(e.root, "secret.txt"), filepath.Join(e.run, "config.toml"))
		}, urls: []string{"/api/run?run=alpha", "/files/alpha/config.toml"}, problem: "config.toml"},
		{name: "config.toml links out (relative)", setup: func(t *testing.T, e env) {
			link(t, "../../secret.txt", filepath.Join(e.run, "config.toml"))
		}, urls: []string{"/api/run?run=alpha", "/files/alpha/config.toml"}, problem: "config.toml"},
		{name: "manifest.json links out", setup: func(t *testing.T, e env) {
			link(t, filepath.Join(e.root, "secret.json"), filepath.Join(e.run, "manifest.json"))
		}, urls: []string{"/api/run?run=alpha", "/files/alpha/manifest.json"}, problem: "manifest.json"},
		{name: "data_report.json links out", setup: func(t *testing.T, e env) {
			link(t, filepath.Join(e.root, "secret.json"), filepath.Join(e.run, "data_report.json"))
		}, urls: []string{"/api/run?run=alpha"}, problem: "data_report.json"},
		{name: "data.path names a dataset outside the run", setup: func(t *testing.T, e env) {
			write(t, filepath.Join(e.root, "dataset", "report.json"), secretJSON)
			write(t, filepath.Join(e.run, "config.toml"), fmt.Sprintf("[data]\npath = %q\n", filepath.Join(e.root, "dataset")))
		}, urls: []string{"/api/run?run=alpha"}},
		{name: "data.path names a file outside the run", setup: func(t *testing.T, e env) {
			write(t, filepath.Join(e.run, "config.toml"), "[data]\npath = \"secret.json\"\n") // relative to the project
		}, urls: []string{"/api/run?run=alpha"}},
		{name: "data.path relative to the project", setup: func(t *testing.T, e env) {
			write(t, filepath.Join(e.root, "data", "report.json"), secretJSON)
			write(t, filepath.Join(e.run, "config.toml"), "[data]\npath = \"data\"\n")
		}, urls: []string{"/api/run?run=alpha"}},
		{name: "metrics.jsonl links out", setup: func(t *testing.T, e env) {
			write(t, filepath.Join(e.root, "other.jsonl"), `{"step":1,"top secret":1}`+"\n")
			link(t, filepath.Join(e.root, "other.jsonl"), filepath.Join(e.run, "metrics.jsonl"))
		}, urls: []string{"/api/names?run=alpha", "/api/metrics?run=alpha&max_points=0", "/api/run?run=alpha", "/files/alpha/metrics.jsonl"}},
		{name: "alerts.jsonl links out", setup: func(t *testing.T, e env) {
			write(t, filepath.Join(e.root, "alerts.jsonl"), `{"step":3,"severity":"SEV1","rule":"x","message":"top secret"}`+"\n")
			link(t, filepath.Join(e.root, "alerts.jsonl"), filepath.Join(e.run, "alerts.jsonl"))
		}, urls: []string{"/api/events?run=alpha", "/api/run?run=alpha", "/files/alpha/alerts.jsonl"}},
		{name: "checkpoints links out", setup: func(t *testing.T, e env) {
			if err := os.MkdirAll(filepath.Join(e.root, "elsewhere", "step-777"), 0o755); err != nil {
				t.Fatal(err)
			}
			link(t, filepath.Join(e.root, "elsewhere"), filepath.Join(e.run, "checkpoints"))
		}, urls: []string{"/api/events?run=alpha"}},
		{name: "report directory links out", setup: func(t *testing.T, e env) {
			write(t, filepath.Join(e.root, "rep", "loss.png"), secret)
			link(t, filepath.Join(e.root, "rep"), filepath.Join(e.run, "report"))
		}, urls: []string{"/api/run?run=alpha", "/files/alpha/report/loss.png"}},
		{name: "event file links out", setup: func(t *testing.T, e env) {
			link(t, filepath.Join(e.root, "secret.txt"), filepath.Join(e.run, "events.out.tfevents.1.host"))
		}, urls: []string{"/files/alpha/events.out.tfevents.1.host"}},
		{name: "config.toml is a named pipe", setup: func(t *testing.T, e env) {
			_ = os.Remove(filepath.Join(e.run, "config.toml"))
			if err := mkfifo(filepath.Join(e.run, "config.toml")); err != nil {
				t.Skipf("no named pipes here: %v", err)
			}
		}, urls: []string{"/api/run?run=alpha", "/files/alpha/config.toml"}, problem: "not a regular file"},
		{name: "links inside the run are followed", setup: func(t *testing.T, e env) {
			write(t, filepath.Join(e.run, "configs", "used.toml"), "[optim]\nlr = 0.5\n")
			link(t, filepath.Join("configs", "used.toml"), filepath.Join(e.run, "config.toml"))
			write(t, filepath.Join(e.run, "data_report.json"), `{"kept_docs":42}`)
		}, urls: []string{"/api/run?run=alpha", "/files/alpha/config.toml"}, want: `"kept_docs":42`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			e := env{root: root, run: filepath.Join(root, "runs", "alpha")}
			writeRun(t, e.run, 40, 10, 20)
			write(t, filepath.Join(root, "secret.txt"), secret)
			write(t, filepath.Join(root, "secret.json"), secretJSON)
			tc.setup(t, e)
			srv, err := New(filepath.Join(root, "runs"), nil)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			cl := &http.Client{Timeout: 10 * time.Second}
			for _, u := range tc.urls {
				resp, err := cl.Get(ts.URL + u)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(b), secret) || strings.Contains(string(b), "step-777") {
					t.Errorf("GET %s (status %d) read outside the run: %.300s", u, resp.StatusCode, b)
				}
				if tc.want != "" && resp.StatusCode != 200 {
					t.Errorf("GET %s: status %d: %.300s", u, resp.StatusCode, b)
				}
			}
			if tc.problem != "" || tc.want != "" {
				var info RunInfo
				if err := json.Unmarshal(get(t, ts.URL+"/api/run?run=alpha", 200), &info); err != nil {
					t.Fatal(err)
				}
				if tc.problem != "" && !strings.Contains(strings.Join(info.Problems, "\n"), tc.problem) {
					t.Errorf("problems %q do not name %s", info.Problems, tc.problem)
				}
				b, _ := json.Marshal(info)
				if tc.want != "" && (!strings.Contains(string(b), tc.want) || info.ConfigFlat["optim.lr"] != "0.5") {
					t.Errorf("a link inside the run was not followed: %.500s", b)
				}
			}
		})
	}
}

// TestHostHeaderRefused: a request reaching the server under another host
// name (a rebound DNS name) gets 403 and a message naming the addresses
// that work; the loopback names are served.
func TestHostHeaderRefused(t *testing.T) {
	ts, _ := newTestServer(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	for _, tc := range []struct {
		host string
		code int
	}{
		{"127.0.0.1:" + port, 200},
		{"localhost:" + port, 200},
		{"[::1]:" + port, 200},
		{"evil.example:" + port, 403},
		{"evil.example", 403},
		{"127.0.0.1:1", 403},
	} {
		for _, path := range []string{"/api/runs", "/api/run?run=alpha", "/"} {
			req, err := http.NewRequest("GET", ts.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Errorf("Host %q %s: status %d, want %d: %.200s", tc.host, path, resp.StatusCode, tc.code, b)
			}
			if tc.code == 403 && (!strings.Contains(string(b), "DNS rebinding") || !strings.Contains(string(b), "localhost:"+port)) {
				t.Errorf("Host %q: unclear refusal %q", tc.host, b)
			}
		}
	}
}

// smallBuffers shrinks the send buffer of accepted connections (to 64 KiB), so a
// response of a few MB cannot hide in socket buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// stalledClient starts a server over one large run and sends a raw request
// for all its metrics unreduced (several MB) that it then does not read
// past the response header. It returns the server, the response (its body
// unread) and the connection.
func stalledClient(t *testing.T, writeIdle time.Duration) (*httptest.Server, *http.Response) {
	t.Helper()
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "runs", "big"), 8000, 30, 4000)
	srv, err := New(filepath.Join(root, "runs"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.writeIdle = writeIdle
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Listener = smallBuffers{ts.Listener}
	ts.Start()
	t.Cleanup(ts.Close)
	get(t, ts.URL+"/api/names?run=big", 200) // parse the run before the clock matters
	addr := ts.Listener.Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(64 << 10)
	if _, err := fmt.Fprintf(c, "GET /api/metrics?run=big&max_points=0&x=tokens HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		t.Fatal(err)
	}
	// The header arrives once the handler has begun writing the body.
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return ts, resp
}

// TestStalledClientDoesNotBlockOthers: while one client has asked for a
// response far larger than the socket buffers and does not read it, other
// clients' requests for the same run are answered promptly.
func TestStalledClientDoesNotBlockOthers(t *testing.T) {
	ts, stalled := stalledClient(t, 30*time.Second)
	time.Sleep(200 * time.Millisecond) // let the stalled write fill the buffers
	cl := &http.Client{Timeout: 3 * time.Second}
	for _, u := range []string{"/api/metrics?run=big&names=train_loss_raw&max_points=100", "/api/runs", "/api/run?run=big", "/api/events?run=big", "/api/names?run=big"} {
		start := time.Now()
		resp, err := cl.Get(ts.URL + u)
		if err != nil {
			t.Fatalf("GET %s while another client stalls: %v", u, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: status %d", u, resp.StatusCode)
		}
		t.Logf("GET %s: %v", u, time.Since(start))
	}
	// The stalled response was indeed larger than the buffers, and it is
	// still whole when its client finally reads.
	b, err := io.ReadAll(stalled.Body)
	if err != nil {
		t.Fatalf("the stalled response, read late: %v", err)
	}
	t.Logf("stalled response: %d bytes", len(b))
	if len(b) < 2<<20 || !json.Valid(b) {
		t.Fatalf("stalled response: %d bytes, valid JSON %v", len(b), json.Valid(b))
	}
}

// TestStalledClientIsDropped: a client that takes no data for the write
// deadline loses its connection instead of holding a handler forever.
func TestStalledClientIsDropped(t *testing.T) {
	_, stalled := stalledClient(t, 300*time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	b, err := io.ReadAll(stalled.Body)
	if err == nil {
		t.Fatalf("a client that read nothing for 1.5 s still got the whole response (%d bytes): no write deadline", len(b))
	}
}

// TestStreamOutlivesWriteDeadline: the event stream writes only when the
// run grows; a quiet stream must not be cut by the write deadline.
func TestStreamOutlivesWriteDeadline(t *testing.T) {
	root := t.TempDir()
	run := writeRun(t, filepath.Join(root, "runs", "beta"), 30, 10, 10)
	srv, err := New(filepath.Join(root, "runs"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.poll = 20 * time.Millisecond
	srv.writeIdle = 100 * time.Millisecond
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/api/stream?run=beta")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := func() string {
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "data:") {
				return l
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return ""
	}
	next()
	time.Sleep(500 * time.Millisecond) // quiet for 5 write deadlines
	f, err := os.OpenFile(filepath.Join(run, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"step":31,"train_loss_raw":2}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if l := next(); !strings.Contains(l, `"rows":31`) {
		t.Fatalf("event after the quiet spell: %q", l)
	}
}
