package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/strandhq/strand/api"
)

// An open server (no user in the store: every caller may do everything)
// answers only what the tools of the machine it runs on send: the CLI, a
// worker, a Go client, curl, the console it serves. A web page of another
// site, open in a browser on that machine, reaches the server too; these
// checks keep it from acting through it:
//
//   - DNS rebinding: a page of evil.example whose name is made to resolve
//     to 127.0.0.1 calls the server as its own origin, so the browser lets
//     it read the answers. Its requests carry "Host: evil.example", which
//     is not a name of this machine: refused.
//   - Cross-site changes: a page may send a form or a fetch without a
//     preflight to any address (its answer unread, but the change made).
//     The browser adds an Origin header that names the page's site to
//     every request that is not a GET or HEAD, and such a request's body
//     can only be a form, text/plain or bytes without a Content-Type: a
//     change whose Origin is not the server's own, or whose body is not
//     application/json, is refused.
//
// A change without a body and without an Origin (the CLI's cancel, say)
// comes from no browser: browsers name the origin of every POST, PUT and
// DELETE, as "null" when the page may not say where it is.

// openModeRefusal starts every refusal of the open-mode guard.
const openModeRefusal = "this server runs without users and answers only requests from this machine's own tools"

// guardOpen returns why an open server refuses a request, or nil. It
// guards a server that was told it runs open (Options.Open: strand server
// with no user in the store); a handler with neither Access nor Open (a
// test's, a program's that serves the engine on its own terms) is left
// as it was.
func (h *handler) guardOpen(r *http.Request) error {
	if !h.opts.Open {
		return nil
	}
	if !h.servesHost(r.Host) {
		names := "localhost, 127.0.0.1, ::1"
		if len(h.opts.HostNames) > 0 {
			names += ", " + strings.Join(h.opts.HostNames, ", ")
		}
		also := ""
		if h.opts.AnyAddressHost {
			also = " or an IP address"
		}
		return fmt.Errorf("%w: %s: Host %s is not a name of this machine (%s)%s: start the server with --host-name %s if it is one",
			api.ErrPermissionDenied, openModeRefusal, quoteHost(r.Host), names, also, hostOnly(r.Host))
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
		return fmt.Errorf("%w: %s: a change sent by the web page of %s is refused (only the console this server serves at %s may send one)",
			api.ErrPermissionDenied, openModeRefusal, quoteHost(origin), ownOrigin(r))
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil // no body: nothing a web page could have chosen
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		what := "no Content-Type"
		if ct != "" {
			what = "Content-Type " + quoteHost(ct)
		}
		return fmt.Errorf("%w: %s: a change must send its body as Content-Type: application/json, not with %s, which a web page of any site may send "+
			"(with curl, add -H 'Content-Type: application/json')", api.ErrPermissionDenied, openModeRefusal, what)
	}
	return nil
}

// servesHost reports whether host (a Host header: a name or address, with
// or without a port) names this server: a loopback name or address, one of
// HostNames, or with AnyAddressHost any IP address. An empty Host (HTTP/1.0)
// comes from no browser.
func (h *handler) servesHost(host string) bool {
	if host == "" {
		return true
	}
	name := hostName(hostOnly(host))
	if name == "localhost" {
		return true
	}
	for _, n := range h.opts.HostNames {
		if hostName(n) == name {
			return true
		}
	}
	if addr, err := netip.ParseAddr(name); err == nil {
		// An address cannot be made to point elsewhere, as a name can.
		return addr.Unmap().IsLoopback() || h.opts.AnyAddressHost
	}
	return false
}

// hostName is a host name or address as servesHost compares them: lower
// case, without a final dot or an IPv6 address's brackets.
func hostName(s string) string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

// hostOnly is a Host header without its port.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// ownOrigin is the origin the server is reached at, as its Host says.
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// sameOrigin reports whether an Origin header names the server itself.
func sameOrigin(origin string, r *http.Request) bool {
	return strings.EqualFold(origin, ownOrigin(r))
}

// quoteHost quotes what a request claimed for an error message, shortened.
func quoteHost(s string) string {
	if len(s) > 100 {
		s = strings.ToValidUTF8(s[:100], "") + "…"
	}
	return fmt.Sprintf("%q", s)
}
