package hostcheck

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAllowed: the Host must name the address the connection arrived on
// (its IP, a loopback name on loopback, or a listen name), with its port.
func TestAllowed(t *testing.T) {
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8077}
	lo6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 8077}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8077}
	lo80 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
	for _, tc := range []struct {
		host  string
		local *net.TCPAddr
		names []string
		ok    bool
	}{
		{"127.0.0.1:8077", lo, nil, true},
		{"localhost:8077", lo, nil, true},
		{"LocalHost.:8077", lo, nil, true},
		{"[::1]:8077", lo, nil, true},
		{"[::1]:8077", lo6, nil, true},
		{"localhost:8077", lo6, nil, true},
		{"localhost", lo80, nil, true},
		{"127.0.0.1", lo80, nil, true},
		{"localhost", lo, nil, false},         // port 80 implied
		{"localhost:8078", lo, nil, false},    // wrong port
		{"evil.example:8077", lo, nil, false}, // DNS rebinding
		{"evil.example", lo80, nil, false},
		{"localhost.evil.example:8077", lo, nil, false},
		{"192.168.1.5:8077", lo, nil, false},
		{"", lo, nil, false},
		{":8077", lo, nil, false},
		{"192.168.1.5:8077", lan, nil, true},
		{"localhost:8077", lan, nil, false}, // the connection is not on loopback
		{"127.0.0.1:8077", lan, nil, false},
		{"gpu-box:8077", lan, nil, false},
		{"gpu-box:8077", lan, []string{"gpu-box"}, true},
		{"GPU-BOX.:8077", lan, []string{"gpu-box"}, true},
		{"gpu-box:9000", lan, []string{"gpu-box"}, false},
	} {
		err := Allowed(tc.host, tc.local, tc.names)
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "DNS rebinding") {
			t.Errorf("Host %q on %v (names %v): %v, want allowed=%v", tc.host, tc.local, tc.names, err, tc.ok)
		}
	}
}

// TestHandler: a request under another host name gets 403 with the
// server's name in the message; the address itself is served.
func TestHandler(t *testing.T) {
	ts := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }), "test server", nil))
	defer ts.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	for _, tc := range []struct {
		host string
		code int
	}{{"127.0.0.1:" + port, 200}, {"localhost:" + port, 200}, {"evil.example:" + port, 403}} {
		req, _ := http.NewRequest("GET", ts.URL, nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("Host %s: %d, want %d", tc.host, resp.StatusCode, tc.code)
		}
	}
	if got := Names("gpu-box:9100"); len(got) != 1 || got[0] != "gpu-box" {
		t.Errorf("Names(gpu-box:9100) = %v", got)
	}
	if got := Names("127.0.0.1:9100"); len(got) != 0 {
		t.Errorf("Names(127.0.0.1:9100) = %v", got)
	}
}
