package dashboard

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// checkHost refuses a request whose Host header does not name this server,
// with 403 and a message saying which addresses do. It is the defence
// against DNS rebinding: a page on evil.example whose name is re-pointed at
// 127.0.0.1 reaches the loopback dashboard as the same origin, but its
// requests still carry "Host: evil.example".
//
// The address the connection arrived on decides (the listen address, or for
// a wildcard listen address the interface the client used): the Host must
// carry its port and, as host, that IP literal, a loopback name or literal
// (localhost, 127.0.0.1, [::1]) when the connection is on loopback, or the
// name the server was told to listen on (--addr myhost:8077). A request that
// came through no network connection (an in-process call of the handler)
// has no address to check against and is served.
func (s *Server) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		local, _ := req.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if local != nil {
			if err := allowedHost(req.Host, local, s.hostNames); err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, req)
	})
}

// allowedHost checks a Host header against the local address of the
// connection and the extra names the server answers to; the error says why
// and which hosts would do.
func allowedHost(host string, local net.Addr, names []string) error {
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
		return fmt.Errorf("dashboard: Host %q is not this server's address; open it as %s (other host names are refused against DNS rebinding)",
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
