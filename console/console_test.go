package console_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strandhq/strand/console"
)

func get(t *testing.T, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	console.Handler().ServeHTTP(rec, req)
	return rec
}

// index is dist/index.html as built.
func index(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("dist", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// asset returns the path of a built file under dist/assets with the suffix.
func asset(t *testing.T, suffix string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("dist", "assets"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			return "/assets/" + e.Name()
		}
	}
	t.Fatalf("no dist/assets/*%s: build the console (cd web && npm ci && npm run build)", suffix)
	return ""
}

func TestIndex(t *testing.T) {
	want := index(t)
	for _, p := range []string{"/", "/index.html"} {
		rec := get(t, http.MethodGet, p, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: status %d", p, rec.Code)
		}
		if got := rec.Body.String(); got != want {
			t.Errorf("GET %s: body is not dist/index.html:\n%s", p, got)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", p, cc)
		}
	}
	if !strings.Contains(want, `<div id="root">`) || !strings.Contains(want, "/assets/") {
		t.Errorf("dist/index.html does not load the app:\n%s", want)
	}
}

func TestDeepLinkServesIndex(t *testing.T) {
	want := index(t)
	for _, p := range []string{
		"/namespaces/default/runs",
		"/namespaces/default/runs/wf-1/run-2",
		"/namespaces/default/runs/wf%2Fwith%2Fslashes/run-2?status=failed",
		"/no/such/page.txt",
	} {
		rec := get(t, http.MethodGet, p, nil)
		if rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Errorf("GET %s: status %d, body is index.html: %v", p, rec.Code, rec.Body.String() == want)
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", p, cc)
		}
	}
}

func TestAsset(t *testing.T) {
	for suffix, ctype := range map[string]string{".js": "text/javascript", ".css": "text/css"} {
		p := asset(t, suffix)
		want, err := os.ReadFile(filepath.Join("dist", filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		rec := get(t, http.MethodGet, p, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: status %d", p, rec.Code)
		}
		if rec.Body.String() != string(want) {
			t.Errorf("GET %s: body differs from the file", p)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", p, ct, ctype)
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: Cache-Control %q", p, cc)
		}
	}
}

func TestMissingAssetIsNotFound(t *testing.T) {
	for _, p := range []string{"/assets/index-00000000.js", "/assets/", "/assets/../assets/nope.css"} {
		rec := get(t, http.MethodGet, p, nil)
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, rec.Code)
		}
		if strings.Contains(rec.Body.String(), `<div id="root">`) {
			t.Errorf("GET %s: served index.html", p)
		}
	}
}

func TestAPIPathIsNotFound(t *testing.T) {
	for _, p := range []string{"/api", "/api/v1/nothing"} {
		if rec := get(t, http.MethodGet, p, nil); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, rec.Code)
		}
	}
}

func TestRevalidation(t *testing.T) {
	rec := get(t, http.MethodGet, "/", nil)
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("index.html has no ETag")
	}
	rec = get(t, http.MethodGet, "/namespaces/default/runs", http.Header{"If-None-Match": {etag}})
	if rec.Code != http.StatusNotModified {
		t.Errorf("GET with the index's ETag: status %d, want 304", rec.Code)
	}
}

func TestMethods(t *testing.T) {
	rec := get(t, http.MethodHead, "/", nil)
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD /: status %d, %d body bytes", rec.Code, rec.Body.Len())
	}
	rec = get(t, http.MethodPost, "/", nil)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: status %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}
