// Package console serves Strand's web console: the single-page app whose
// sources are in web/ (React, TypeScript, Vite), built into dist/ and
// embedded in the binary, so that `strand server` serves it at / beside the
// API under /api/.
//
// Rebuild dist/ after changing web/ (cd console/web && npm ci && npm run
// build) and commit both. The build is deterministic: the same sources and
// package-lock.json give byte-identical files, so a rebuild compared with
// the committed dist/ shows whether it matches its sources.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed all:dist
var dist embed.FS

// file is one built file, read once.
type file struct {
	data []byte
	etag string
}

// files are the built files by path relative to dist/ ("index.html",
// "assets/index-h7AHWzD6.js").
var files = sync.OnceValue(func() map[string]file {
	root, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	out := map[string]file{}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[p] = file{data: data, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		panic(err)
	}
	return out
})

// Handler serves the console for GET and HEAD requests:
//
//   - a path naming a built file serves it; files under /assets/ have
//     content-hashed names and are cached for a year (immutable), every
//     other file (index.html among them) is revalidated on each use
//     (no-cache, with an ETag);
//   - a path under /assets/ that names no file is 404, so that a stale
//     page asking for an asset of an older build fails visibly;
//   - a path under /api/ is 404 (the API's own routes answer those);
//   - any other path serves index.html, whose router draws the page the
//     path names (deep links such as /namespaces/default/runs/wf-1/run-2
//     survive a reload).
//
// Other methods are 405.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := path.Clean("/" + r.URL.Path)
	if p == "/api" || strings.HasPrefix(p, "/api/") {
		http.NotFound(w, r)
		return
	}
	name := strings.TrimPrefix(p, "/")
	f, ok := files()[name]
	asset := name == "assets" || strings.HasPrefix(name, "assets/")
	switch {
	case ok && asset:
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	case asset:
		http.NotFound(w, r)
		return
	case ok && name != "index.html":
		w.Header().Set("Cache-Control", "no-cache")
	default:
		name, f = "index.html", files()["index.html"]
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Header().Set("ETag", f.etag)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// A zero modification time: ServeContent sends no Last-Modified and
	// answers If-None-Match with 304 from the ETag.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}
