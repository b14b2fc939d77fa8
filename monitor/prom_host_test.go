package monitor

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestPrometheusHostHeader: /metrics answers only to requests whose Host
// names the endpoint, as the dashboard does (before: any Host was served,
// so a DNS-rebinding page could read the run's metrics).
func TestPrometheusHostHeader(t *testing.T) {
	p, err := NewPrometheusSink("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, port, _ := net.SplitHostPort(p.Addr())
	for _, tc := range []struct {
		host string
		code int
	}{{"127.0.0.1:" + port, 200}, {"localhost:" + port, 200}, {"evil.example:" + port, 403}, {"127.0.0.1:1", 403}} {
		req, _ := http.NewRequest("GET", "http://"+p.Addr()+"/metrics", nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("Host %s: %d, want %d", tc.host, resp.StatusCode, tc.code)
		}
		if tc.code == 403 && !strings.Contains(string(body), "DNS rebinding") {
			t.Errorf("Host %s: refusal %q does not say why", tc.host, body)
		}
	}
}
