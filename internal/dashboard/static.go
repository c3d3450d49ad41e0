package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// assets are the dashboard's pages, script, styles and vendored libraries
// (assets/vendor, refreshed by scripts/dashboard-vendor.sh), compiled into
// the binary.
//
//go:embed assets
var assets embed.FS

// staticHandler serves assets/ under /dashboard/static/ (public code: no
// session needed). The page templates are not served.
func staticHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Prefix+"/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case Prefix + "/static/login.html", Prefix + "/static/index.html":
			writeError(w, http.StatusNotFound, "not found")
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
