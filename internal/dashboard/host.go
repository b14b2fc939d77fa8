package dashboard

import (
	"net/http"

	"github.com/kestrel-lm/kestrel/internal/hostcheck"
)

// checkHost refuses a request whose Host header does not name this server,
// with 403 and a message saying which addresses do: the defence against
// DNS rebinding, internal/hostcheck's rule (shared with the Prometheus
// endpoint). The names besides IP literals it answers to are the host of
// the listen address when it is a name (--addr myhost:8077).
func (s *Server) checkHost(h http.Handler) http.Handler {
	return hostcheck.Handler(h, "dashboard", s.hostNames)
}
