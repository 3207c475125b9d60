// Package serve is `dstgen serve`: a small read-only web server over a
// results tree (RESULTS, usually testing/results) that lists every session
// newest first — plan, session verdict, scenario verdicts as coloured badges,
// date — filters them by plan and verdict with plain HTML forms, and opens a
// session's report.html, findings, porcupine visualizations and raw
// artifacts (histories, run.json, logs). docs/serve.md is the user's page.
//
// Every read goes through an os.Root opened on RESULTS, so no request can
// reach a file outside it: ".." and "." segments, encoded slashes and
// backslashes are refused before any lookup, names must be filepath.IsLocal,
// and os.Root itself refuses symlinks that resolve outside the tree. Only
// GET and HEAD are served; directories are never listed except as session
// pages.
package serve

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dstgen/dstgen/analyze"
	"github.com/dstgen/dstgen/session"
)

// assets holds the page templates and the stylesheet. A package-level
// variable because go:embed only fills those; never written after init.
//
//go:embed templates
var assets embed.FS

// MaxFiles bounds how many files a session page lists.
const MaxFiles = 2000

// Content-Security-Policy values. dstgen's own pages load only their
// stylesheet; files from RESULTS (report.html, porcupine visualizations)
// carry inline styles and scripts, so they may run those, but sandboxed
// (an opaque origin) and without any network access or forms.
const (
	pageCSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	fileCSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'; sandbox allow-scripts"
)

// Server serves one results tree. Its zero value is not usable: make one
// with New and Close it when done.
type Server struct {
	results string
	root    *os.Root
	fsys    fs.FS
	tmpl    *template.Template
	css     []byte
}

// New opens the results directory for serving. The directory is held open
// (as an os.Root) until Close.
func New(results string) (*Server, error) {
	st, err := os.Stat(results)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("serve: %s is not a directory", results)
	}
	root, fsys, err := osRootFS(results)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"badge":      badgeClass,
		"sessionURL": sessionURL,
		"fileURL":    fileURL,
		"date":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"size":       humanSize,
	}).ParseFS(assets, "templates/*.html")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("serve: parse templates: %w", err)
	}
	css, err := assets.ReadFile("templates/style.css")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("serve: read stylesheet: %w", err)
	}
	return &Server{results: results, root: root, fsys: fsys, tmpl: tmpl, css: css}, nil
}

// Close releases the results directory.
func (s *Server) Close() error { return s.root.Close() }

// Sessions lists the sessions under RESULTS, newest first (see List).
func (s *Server) Sessions() ([]Session, error) { return List(s.fsys) }

// sessionURL is the session page of the session at rel.
func sessionURL(rel string) string {
	if rel == "." {
		return "/session/"
	}
	return "/session/" + escapePath(rel) + "/"
}

// fileURL is the raw view of file name inside the session at rel.
func fileURL(rel, name string) string {
	return "/file/" + escapePath(path.Join(rel, name))
}

// escapePath escapes each segment of a slash path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// ServeHTTP routes a request after refusing anything that could name a
// path outside RESULTS.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", pageCSP)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: only GET and HEAD", http.StatusMethodNotAllowed)
		return
	}
	if reason := badPath(r); reason != "" {
		http.Error(w, "bad path: "+reason, http.StatusBadRequest)
		return
	}
	p := r.URL.Path
	switch {
	case p == "/":
		s.index(w, r)
	case p == "/static/style.css":
		h.Set("Content-Type", "text/css; charset=utf-8")
		w.Write(s.css)
	case strings.HasPrefix(p, "/session/"):
		s.sessionPage(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/session/"), "/"))
	case strings.HasPrefix(p, "/file/"):
		s.file(w, r, strings.TrimPrefix(p, "/file/"))
	default:
		http.NotFound(w, r)
	}
}

// badPath says why a request path is refused before routing, or "".
func badPath(r *http.Request) string {
	raw := strings.ToLower(r.URL.EscapedPath())
	for _, enc := range []string{"%2f", "%5c", "%00"} {
		if strings.Contains(raw, enc) {
			return "encoded slash, backslash or NUL"
		}
	}
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		return "not absolute"
	}
	if strings.ContainsAny(p, "\\\x00") {
		return "backslash or NUL"
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == ".." || seg == "." {
			return "dot segment"
		}
	}
	if strings.Contains(p[1:], "//") {
		return "empty segment"
	}
	return ""
}

// indexData is what templates/index.html renders.
type indexData struct {
	Results  string
	Filter   Filter
	Plans    []string
	Verdicts []string
	Total    int
	Sessions []Session
	Warning  string
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	all, err := s.Sessions()
	q := r.URL.Query()
	f := Filter{Plan: q.Get("plan"), Verdict: q.Get("verdict")}
	d := indexData{Results: s.results, Filter: f, Plans: plansOf(all), Verdicts: verdictsOf(), Total: len(all), Sessions: f.Apply(all)}
	if err != nil {
		d.Warning = err.Error()
	}
	s.render(w, "index.html", d)
}

// sessionData is what templates/session.html renders.
type sessionData struct {
	Results   string
	Session   Session
	Report    *analyze.Report
	Links     []link
	Files     []fileRow
	Truncated bool
}

type link struct{ Name, Label string }

type fileRow struct {
	Name string
	Size int64
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request, rel string) {
	if rel == "" {
		rel = "."
	}
	if rel != "." && !filepath.IsLocal(rel) {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	all, _ := s.Sessions()
	i := slices.IndexFunc(all, func(x Session) bool { return x.Rel == rel })
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	d := sessionData{Results: s.results, Session: all[i]}
	if all[i].Analyzed {
		if data, err := fs.ReadFile(s.fsys, path.Join(rel, ReportFile)); err == nil {
			d.Report = decodeReport(data)
		}
	}
	d.Files, d.Truncated = s.files(rel)
	for _, f := range d.Files {
		dir, name := path.Split(f.Name)
		if dir != session.FindingsDir+"/" {
			continue
		}
		switch {
		case name == analyze.ReportHTMLFile:
			d.Links = append([]link{{f.Name, "report (HTML)"}}, d.Links...)
		case strings.HasSuffix(name, ".html"):
			d.Links = append(d.Links, link{f.Name, "visualization " + strings.TrimSuffix(name, ".html")})
		case name == analyze.ReportMarkdownFile || name == analyze.ReportJSONFile || name == analyze.ReportJUnitFile:
			d.Links = append(d.Links, link{f.Name, name})
		}
	}
	s.render(w, "session.html", d)
}

// decodeReport reads a plan session's report.json for the scenario table;
// nil for another schema or a report that does not decode.
func decodeReport(data []byte) *analyze.Report {
	var rep analyze.Report
	if err := json.Unmarshal(data, &rep); err != nil || rep.Schema != analyze.ReportSchema {
		return nil
	}
	return &rep
}

// files lists the regular files of the session at rel, relative to it,
// bounded by MaxFiles; symlinks are not followed.
func (s *Server) files(rel string) ([]fileRow, bool) {
	var out []fileRow
	truncated := false
	errStop := errors.New("stop")
	_ = fs.WalkDir(s.fsys, rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if len(out) >= MaxFiles {
			truncated = true
			return errStop
		}
		var size int64
		if fi, err := d.Info(); err == nil {
			size = fi.Size()
		}
		name := p
		if rel != "." {
			name = strings.TrimPrefix(p, rel+"/")
		}
		out = append(out, fileRow{Name: name, Size: size})
		return nil
	})
	return out, truncated
}

// contentTypes are the types of the files a session holds; anything else
// is served as text when it looks like text, else as bytes to download.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".htm":   "text/html; charset=utf-8",
	".json":  "application/json",
	".jsonl": "text/plain; charset=utf-8",
	".log":   "text/plain; charset=utf-8",
	".md":    "text/plain; charset=utf-8",
	".txt":   "text/plain; charset=utf-8",
	".csv":   "text/plain; charset=utf-8",
	".xml":   "text/xml; charset=utf-8",
	".svg":   "image/svg+xml",
	".png":   "image/png",
}

// ContentType is the Content-Type a file named name is served with.
func ContentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ct, ok := contentTypes[ext]; ok {
		return ct
	}
	if ct := mime.TypeByExtension(ext); strings.HasPrefix(ct, "image/") {
		return ct
	}
	return "text/plain; charset=utf-8"
}

func (s *Server) file(w http.ResponseWriter, r *http.Request, rel string) {
	if !filepath.IsLocal(rel) {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	f, err := s.root.Open(rel)
	if err != nil {
		// Missing, or os.Root refused it (a symlink out of RESULTS).
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		// No directory listings outside the session pages.
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ContentType(rel))
	w.Header().Set("Content-Security-Policy", fileCSP)
	http.ServeContent(w, r, path.Base(rel), st.ModTime(), f)
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf strings.Builder
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, buf.String())
}

// humanSize prints a byte count for the file list.
func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ShutdownTimeout bounds the graceful shutdown: requests still running
// after it are cut.
const ShutdownTimeout = 5 * time.Second

// Serve serves h on ln until ctx is done, then shuts down gracefully
// (in-flight requests get ShutdownTimeout to finish). It returns nil after
// a shutdown that ctx asked for.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
		// Requests must outlive ctx's cancellation by the shutdown grace.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
