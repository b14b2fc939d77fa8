// Package hostcheck is the one Host-header rule of kestrel's HTTP servers
// (the dashboard, the Prometheus endpoint): the defence against DNS
// rebinding. A page on evil.example whose name is re-pointed at 127.0.0.1
// reaches a loopback server as the same origin, but its requests still
// carry "Host: evil.example", so they are refused.
//
// The address the connection arrived on decides (the listen address, or
// for a wildcard listen address the interface the client used): the Host
// must carry its port and, as host, that IP literal, a loopback name or
// literal (localhost, 127.0.0.1, [::1]) when the connection is on
// loopback, or a name the server was told to listen on (--addr
// myhost:8077). A request that came through no network connection (an
// in-process call of the handler) has no address to check against and is
// served.
//
// The package imports nothing of the project (floor 1).
package hostcheck

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Names returns the host names besides IP literals a server listening on
// addr answers to: the host of addr when it is a name, else none.
func Names(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" || net.ParseIP(strings.Trim(host, "[]")) != nil {
		return nil
	}
	return []string{host}
}

// Handler serves h only for requests whose Host names the server (see the
// package comment); others get 403 and a message, prefixed by who ("the
// Prometheus endpoint"), saying which hosts would do.
func Handler(h http.Handler, who string, names []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		local, _ := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if local != nil {
			if err := Allowed(req.Host, local, names); err != nil {
				http.Error(w, who+": "+err.Error(), http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, req)
	})
}

// Allowed checks a Host header against the local address of the
// connection and the extra names the server answers to; the error says
// why and which hosts would do.
func Allowed(host string, local net.Addr, names []string) error {
	tcp, ok := local.(*net.TCPAddr)
	if !ok {
		return nil // not TCP (a unix socket): no browser reaches it by name
	}
	port := strconv.Itoa(tcp.Port)
	want := []string{net.JoinHostPort(tcp.IP.String(), port)}
	if tcp.IP.IsLoopback() {
		want = append(want, net.JoinHostPort("localhost", port))
	}
	for _, n := range names {
		want = append(want, net.JoinHostPort(n, port))
	}
	refuse := func() error {
		return fmt.Errorf("Host %q is not this server's address; open it as %s (other host names are refused against DNS rebinding)",
			host, strings.Join(want, " or "))
	}
	name, p, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the client's default, 80 for http.
		name, p = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "80"
	}
	if p != port || name == "" {
		return refuse()
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if ip := net.ParseIP(name); ip != nil {
		if ip.Equal(tcp.IP) || (tcp.IP.IsLoopback() && ip.IsLoopback()) {
			return nil
		}
		return refuse()
	}
	if name == "localhost" && tcp.IP.IsLoopback() {
		return nil
	}
	for _, n := range names {
		if strings.EqualFold(strings.TrimSuffix(n, "."), name) {
			return nil
		}
	}
	return refuse()
}
