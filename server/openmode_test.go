package server

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOpenModeGuard: which requests an open server's guard lets through (the
// server-level test is cmd/strand's TestOpenModeAnswersOnlyLocalTools).
func TestOpenModeGuard(t *testing.T) {
	h := &handler{opts: Options{Open: true, HostNames: []string{"Strand.Test", "10.1.2.3"}}}
	wide := &handler{opts: Options{Open: true, AnyAddressHost: true}}
	for _, c := range []struct {
		h                           *handler
		method, host, origin, ctype string
		body                        string
		want                        bool
	}{
		{h, "GET", "127.0.0.1:8233", "", "", "", true},
		{h, "GET", "127.5.6.7", "", "", "", true},
		{h, "GET", "[::1]:8233", "", "", "", true},
		{h, "GET", "LOCALHOST.:8233", "", "", "", true},
		{h, "GET", "strand.test:8233", "", "", "", true},
		{h, "GET", "10.1.2.3:8233", "", "", "", true},
		{h, "GET", "evil.example:8233", "", "", "", false},
		{h, "GET", "localhost.evil.example", "", "", "", false},
		{h, "GET", "10.0.0.5:8233", "", "", "", false},
		{wide, "GET", "10.0.0.5:8233", "", "", "", true},
		{wide, "GET", "[fe80::1]:8233", "", "", "", true},
		{wide, "GET", "evil.example:8233", "", "", "", false},
		{h, "POST", "127.0.0.1:8233", "http://127.0.0.1:8233", "application/json", "{}", true},
		{h, "POST", "127.0.0.1:8233", "", "application/json; charset=utf-8", "{}", true},
		{h, "POST", "127.0.0.1:8233", "", "", "", true},
		{h, "POST", "127.0.0.1:8233", "http://127.0.0.1:8233", "", "", true},
		{h, "POST", "127.0.0.1:8233", "http://127.0.0.1:9999", "application/json", "{}", false},
		{h, "POST", "127.0.0.1:8233", "null", "", "", false},
		{h, "POST", "127.0.0.1:8233", "", "", "{}", false},
		{h, "POST", "127.0.0.1:8233", "", "text/plain", "{}", false},
		{h, "POST", "127.0.0.1:8233", "", "application/x-www-form-urlencoded", "", false},
		{h, "DELETE", "127.0.0.1:8233", "", "multipart/form-data; boundary=x", "--x--", false},
		{&handler{opts: Options{}}, "POST", "evil.example", "https://evil.example", "text/plain", "{}", true},
	} {
		r := httptest.NewRequest(c.method, "/api/v1/namespaces", strings.NewReader(c.body))
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.ctype != "" {
			r.Header.Set("Content-Type", c.ctype)
		}
		if err := c.h.guardOpen(r); (err == nil) != c.want {
			t.Errorf("%s Host %s Origin %q Content-Type %q body %q (open %v): %v, want served %v", c.method, c.host, c.origin, c.ctype, c.body, c.h.opts.Open, err, c.want)
		}
	}
}
