package runner

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/pkg/sftp"
	"golang.org/x/sync/errgroup"
)

// File transfer outcomes, one per file in a FileResult.
const (
	FileOK       = "ok"       // written atomically, sha256 equal on both ends
	FileMismatch = "mismatch" // copied, but the two ends' sha256 differ; not renamed into place
	FileRejected = "rejected" // name or type refused (traversal, symlink, special file)
	FileError    = "error"    // I/O failed
)

// progressThreshold is the size above which transfers print progress lines.
const progressThreshold = 8 << 20

// Limits on one collect, so a hostile or runaway remote tree cannot make the
// walk unbounded.
const (
	maxCollectDepth = 64
	maxCollectFiles = 100000
)

// FileResult is one file's transfer outcome.
type FileResult struct {
	Host   string `json:"host"`
	Source string `json:"source"` // where it was read from
	File   string `json:"file"`   // where it was written
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Fields returns the result as key=value pairs in the order the push and
// collect commands print them.
func (r FileResult) Fields() [][2]string {
	f := [][2]string{{"host", r.Host}, {"file", r.File}, {"bytes", fmt.Sprint(r.Bytes)}, {"sha256", r.SHA256}, {"status", r.Status}}
	if r.Reason != "" {
		f = append(f, [2]string{"reason", r.Reason})
	}
	return f
}

// checkName rejects a single path element that could leave its directory or
// break line-oriented output: "", ".", "..", a separator, NUL or a newline.
func checkName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("name %q is not a file name", name)
	case strings.ContainsAny(name, "/\x00\n\r"):
		return fmt.Errorf("name %q holds '/', NUL or a newline", name)
	}
	return nil
}

// checkRemoteSource validates a remote path given to collect or push: it
// may be absolute (it is only read or written at that place), but no element
// may be "..", and it may not hold NUL or a newline.
func checkRemoteSource(p string) error {
	if p == "" || strings.ContainsAny(p, "\x00\n\r") {
		return fmt.Errorf("remote path %q is empty or holds NUL or a newline", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return fmt.Errorf("remote path %q has a '..' element", p)
		}
	}
	return nil
}

// sftpPath maps "~/x" to "x": SFTP resolves relative paths from the login
// home, like scp, and does no tilde expansion of its own.
func sftpPath(p string) string {
	if p == "~" {
		return "."
	}
	return strings.TrimPrefix(p, "~/")
}

func randSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// progress prints "progress host= file= bytes= total= pct=" lines at most
// once per second, and only for large files.
type progress struct {
	w          io.Writer
	host, file string
	total, n   int64
	last       time.Time
}

func (p *progress) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.w != nil && p.total > progressThreshold && (time.Since(p.last) >= time.Second || p.n == p.total) {
		p.last = time.Now()
		fmt.Fprintln(p.w, FormatKV([][2]string{{"progress", "transfer"}, {"host", p.host}, {"file", p.file},
			{"bytes", fmt.Sprint(p.n)}, {"total", fmt.Sprint(p.total)}, {"pct", fmt.Sprint(p.n * 100 / p.total)}}))
	}
	return len(b), nil
}

// ctxReader stops a copy when ctx ends, so a transfer never outlives its
// caller's deadline by more than one read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(b)
	touch(c.ctx)
	return n, err
}

// stallGuard unblocks an SFTP transfer that stopped making progress.
// pkg/sftp calls take no context, and an sftp-server stuck on a hung disk
// leaves sshd answering keepalives, so neither the caller's deadline nor
// the keepalive would ever end such a call: the guard drops the host's
// connection instead, which fails every call in flight. Progress is
// touched through the context, by every read and every step of the loops.
type stallGuard struct{ last atomic.Int64 }

type stallKey struct{}

func touch(ctx context.Context) {
	if g, _ := ctx.Value(stallKey{}).(*stallGuard); g != nil {
		g.last.Store(time.Now().UnixNano())
	}
}

// guardStall watches one host's transfer: when nothing is touched for the
// round-trip bound plus a margin (a verification Run inside the transfer
// is itself bounded by the bound), sc's connection is dropped. stop ends
// the watch.
func (p *Pool) guardStall(ctx context.Context, h env.Host, sc *sftp.Client) (context.Context, func()) {
	limit := p.bound(context.Background()) + stallMargin
	g := &stallGuard{}
	g.last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(limit / 8)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if idle := time.Since(time.Unix(0, g.last.Load())); idle > limit {
				p.logf("host %s: SFTP transfer made no progress for %s; dropping the connection", h.Name, idle.Round(time.Second))
				p.dropSFTP(h, sc)
				return
			}
		}
	}()
	return context.WithValue(ctx, stallKey{}, g), func() { close(done) }
}

// stallMargin is added to the round-trip bound before a silent transfer
// is abandoned.
const stallMargin = 2 * time.Second

// dropSFTP closes the connection that carries sc, if it still does.
func (p *Pool) dropSFTP(h env.Host, sc *sftp.Client) {
	s, err := p.slot(h.Name)
	if err != nil {
		return
	}
	select {
	case s.lock <- struct{}{}:
	case <-time.After(DialTimeout):
		return
	}
	c := s.c
	<-s.lock
	if c == nil {
		return
	}
	c.sftpMu.Lock()
	mine := c.sftp == sc
	c.sftpMu.Unlock()
	if mine {
		c.close()
	}
}

// remoteHashes returns the sha256 of the first sizes[i] bytes of each remote
// file, computed on the host in one round trip. Only hashes come back, one
// per line, never names. ok is false when the host has no sha256sum.
func remoteHashes(ctx context.Context, sh hostShell, files []string, sizes []int64) (sums []string, ok bool, err error) {
	for start := 0; start < len(files); start += 200 {
		end := min(start+200, len(files))
		var b strings.Builder
		b.WriteString("command -v sha256sum >/dev/null 2>&1 || { echo nosha; exit 0; }\n")
		for i := start; i < end; i++ {
			fmt.Fprintf(&b, "{ head -c %d < %s | sha256sum || echo -; } 2>/dev/null | cut -c1-64\n", sizes[i], shell.Quote(files[i]))
		}
		touch(ctx)
		out, errOut, code, rerr := sh.runScript(ctx, b.String())
		touch(ctx)
		if rerr != nil {
			return nil, false, fmt.Errorf("remote sha256: %w", rerr)
		}
		if code != 0 {
			return nil, false, fmt.Errorf("remote sha256: exit %d%s", code, stderrHint(errOut))
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(lines) > 0 && lines[0] == "nosha" {
			return nil, false, nil
		}
		if len(lines) != end-start {
			return nil, false, fmt.Errorf("remote sha256: %d answers for %d files", len(lines), end-start)
		}
		sums = append(sums, lines...)
	}
	return sums, true, nil
}

// sftpHash re-reads the first n bytes of a remote file over SFTP: the
// fallback when the host lacks sha256sum.
func sftpHash(ctx context.Context, c *sftp.Client, p string, n int64) (string, error) {
	f, err := c.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(ctxReader{ctx, f}, n)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verifyRemote fills want-vs-remote status for results whose tmp files are
// in paths, using sha256sum on the host or, without it, an SFTP re-read.
func verifyRemote(ctx context.Context, c *sftp.Client, sh hostShell, paths []string, sizes []int64) ([]string, error) {
	sums, ok, err := remoteHashes(ctx, sh, paths, sizes)
	if err != nil {
		return nil, err
	}
	if ok {
		return sums, nil
	}
	sums = make([]string, len(paths))
	for i, p := range paths {
		touch(ctx)
		s, err := sftpHash(ctx, c, p, sizes[i])
		if err != nil {
			s = "-"
		}
		sums[i] = s
	}
	return sums, nil
}

// pushItem is one local file and the path, relative to the remote dir,
// where it lands.
type pushItem struct {
	local string
	rel   string // slash-separated, every element checked by checkName
	mode  fs.FileMode
	size  int64
}

// expandLocals turns the LOCAL arguments into files. A directory is pushed
// recursively under its base name; symlinks inside it are not followed.
// A local name that cannot be one remote path element is rejected.
func expandLocals(locals []string) ([]pushItem, []FileResult) {
	var items []pushItem
	var bad []FileResult
	for _, l := range locals {
		base := filepath.Base(filepath.Clean(l))
		if err := checkName(base); err != nil || l == "" {
			bad = append(bad, FileResult{Source: l, File: base, Status: FileRejected, Reason: fmt.Sprintf("local name: %v", err)})
			continue
		}
		fi, err := os.Stat(l)
		if err != nil {
			bad = append(bad, FileResult{Source: l, File: base, Status: FileError, Reason: err.Error()})
			continue
		}
		if fi.Mode().IsRegular() {
			items = append(items, pushItem{local: l, rel: base, mode: fi.Mode().Perm(), size: fi.Size()})
			continue
		}
		if !fi.IsDir() {
			bad = append(bad, FileResult{Source: l, File: base, Status: FileRejected, Reason: "not a regular file or directory"})
			continue
		}
		err = filepath.WalkDir(l, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				bad = append(bad, FileResult{Source: p, Status: FileError, Reason: err.Error()})
				return nil
			}
			rel, _ := filepath.Rel(l, p)
			relSlash := path.Join(base, filepath.ToSlash(rel))
			if d.IsDir() {
				return nil
			}
			if cerr := checkName(d.Name()); cerr != nil {
				bad = append(bad, FileResult{Source: p, File: relSlash, Status: FileRejected, Reason: cerr.Error()})
				return nil
			}
			if !d.Type().IsRegular() {
				bad = append(bad, FileResult{Source: p, File: relSlash, Status: FileRejected, Reason: "not a regular file (symlinks are not followed)"})
				return nil
			}
			info, ierr := d.Info()
			if ierr != nil {
				bad = append(bad, FileResult{Source: p, File: relSlash, Status: FileError, Reason: ierr.Error()})
				return nil
			}
			items = append(items, pushItem{local: p, rel: relSlash, mode: info.Mode().Perm(), size: info.Size()})
			return nil
		})
		if err != nil {
			bad = append(bad, FileResult{Source: l, File: base, Status: FileError, Reason: err.Error()})
		}
	}
	return items, bad
}

// pushHost uploads items under remoteDir on one host: each file goes to a
// hidden temp name next to its target, is hashed on the host, and only a
// matching file is renamed into place (posix-rename, atomic replace).
func pushHost(ctx context.Context, c *sftp.Client, sh hostShell, host string, items []pushItem, remoteDir string, prog io.Writer) []FileResult {
	dir := sftpPath(remoteDir)
	res := make([]FileResult, len(items))
	var tmps []string
	var sizes []int64
	var idx []int
	for i, it := range items {
		touch(ctx)
		final := path.Join(dir, it.rel)
		res[i] = FileResult{Host: host, Source: it.local, File: final}
		if err := ctx.Err(); err != nil {
			res[i].Status, res[i].Reason = FileError, err.Error()
			continue
		}
		if err := c.MkdirAll(path.Dir(final)); err != nil {
			res[i].Status, res[i].Reason = FileError, fmt.Sprintf("mkdir %s: %v", path.Dir(final), err)
			continue
		}
		tmp := path.Join(path.Dir(final), "."+path.Base(final)+".tmp-"+randSuffix())
		n, sum, err := uploadOne(ctx, c, it, tmp, &progress{w: prog, host: host, file: final, total: it.size})
		res[i].Bytes, res[i].SHA256 = n, sum
		if err != nil {
			_ = c.Remove(tmp)
			res[i].Status, res[i].Reason = FileError, err.Error()
			continue
		}
		tmps, sizes, idx = append(tmps, tmp), append(sizes, n), append(idx, i)
	}
	if len(tmps) == 0 {
		return res
	}
	touch(ctx)
	sums, err := verifyRemote(ctx, c, sh, tmps, sizes)
	for k, i := range idx {
		touch(ctx)
		switch {
		case err != nil:
			res[i].Status, res[i].Reason = FileError, err.Error()
		case sums[k] != res[i].SHA256:
			res[i].Status, res[i].Reason = FileMismatch, "remote sha256 "+sums[k]
		default:
			if cerr := c.Chmod(tmps[k], items[i].mode); cerr != nil {
				res[i].Status, res[i].Reason = FileError, fmt.Sprintf("chmod: %v", cerr)
				break
			}
			if rerr := c.PosixRename(tmps[k], res[i].File); rerr != nil {
				res[i].Status, res[i].Reason = FileError, fmt.Sprintf("rename into place: %v", rerr)
				break
			}
			res[i].Status = FileOK
			continue
		}
		_ = c.Remove(tmps[k])
	}
	return res
}

func uploadOne(ctx context.Context, c *sftp.Client, it pushItem, tmp string, p *progress) (int64, string, error) {
	lf, err := os.Open(it.local)
	if err != nil {
		return 0, "", err
	}
	defer lf.Close()
	rf, err := c.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return 0, "", fmt.Errorf("create %s: %w", tmp, err)
	}
	h := sha256.New()
	n, err := io.Copy(rf, io.TeeReader(ctxReader{ctx, lf}, io.MultiWriter(h, p)))
	if cerr := rf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, "", fmt.Errorf("upload %s: %w", it.local, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// collectItem is one remote regular file and the slash path, relative to
// the local DIR, where it lands.
type collectItem struct {
	remote string
	rel    string
	size   int64
}

// walkRemote lists the regular files under the remote sources without
// following any symlink: Lstat for the sources, and ReadDir (whose entries
// carry lstat attributes) below them. Every name is checked before it can
// become part of a local path.
func walkRemote(ctx context.Context, c *sftp.Client, host string, remotes []string) ([]collectItem, []FileResult) {
	var items []collectItem
	var bad []FileResult
	reject := func(src, rel, why string) {
		bad = append(bad, FileResult{Host: host, Source: src, File: rel, Status: FileRejected, Reason: why})
	}
	var walk func(src, rel string, depth int)
	walk = func(src, rel string, depth int) {
		if ctx.Err() != nil || len(items) >= maxCollectFiles || depth > maxCollectDepth {
			reject(src, rel, "collect bound reached (depth, file count or deadline)")
			return
		}
		touch(ctx)
		ents, err := c.ReadDirContext(ctx, src)
		if err != nil {
			bad = append(bad, FileResult{Host: host, Source: src, File: rel, Status: FileError, Reason: err.Error()})
			return
		}
		for _, e := range ents {
			touch(ctx)
			if err := checkName(e.Name()); err != nil {
				reject(src+"/"+e.Name(), rel, err.Error())
				continue
			}
			s, r := path.Join(src, e.Name()), path.Join(rel, e.Name())
			switch {
			case e.Mode()&fs.ModeSymlink != 0:
				reject(s, r, "symlink (not followed)")
			case e.IsDir():
				walk(s, r, depth+1)
			case e.Mode().IsRegular():
				items = append(items, collectItem{remote: s, rel: r, size: e.Size()})
			default:
				reject(s, r, "not a regular file")
			}
		}
	}
	for _, src := range remotes {
		touch(ctx)
		if err := checkRemoteSource(src); err != nil {
			reject(src, "", err.Error())
			continue
		}
		sp := path.Clean(sftpPath(src))
		base := path.Base(sp)
		if err := checkName(base); err != nil {
			reject(src, "", "remote base "+err.Error())
			continue
		}
		fi, err := c.Lstat(sp)
		if err != nil {
			bad = append(bad, FileResult{Host: host, Source: src, File: base, Status: FileError, Reason: err.Error()})
			continue
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			reject(src, base, "symlink (not followed)")
		case fi.IsDir():
			walk(sp, base, 1)
		case fi.Mode().IsRegular():
			items = append(items, collectItem{remote: sp, rel: base, size: fi.Size()})
		default:
			reject(src, base, "not a regular file")
		}
	}
	return items, bad
}

// collectHost downloads the remote sources into root (DIR, or DIR/<host>).
// Local writes go through os.Root, so no name, and no symlink already under
// DIR, can place a byte outside it; each file lands as a hidden temp file
// and is renamed into place only when the host's sha256 of the same bytes
// equals the sha256 of what reached the local disk.
func collectHost(ctx context.Context, c *sftp.Client, sh hostShell, host string, remotes []string, root *os.Root, prog io.Writer) []FileResult {
	items, res := walkRemote(ctx, c, host, remotes)
	type landed struct {
		res       FileResult
		tmp, rel  string
		remoteLen int64
	}
	var ok []landed
	seen := map[string]bool{}
	for _, it := range items {
		touch(ctx)
		r := FileResult{Host: host, Source: it.remote, File: filepath.Join(root.Name(), filepath.FromSlash(it.rel))}
		if seen[it.rel] {
			r.Status, r.Reason = FileRejected, "two sources land on the same local name"
			res = append(res, r)
			continue
		}
		seen[it.rel] = true
		tmp, n, sum, err := downloadOne(ctx, c, root, it, &progress{w: prog, host: host, file: r.File, total: it.size})
		r.Bytes, r.SHA256 = n, sum
		if err != nil {
			if tmp != "" {
				_ = root.Remove(tmp)
			}
			r.Status, r.Reason = FileError, err.Error()
			res = append(res, r)
			continue
		}
		ok = append(ok, landed{res: r, tmp: tmp, rel: it.rel, remoteLen: n})
	}
	if len(ok) == 0 {
		return res
	}
	paths, sizes := make([]string, len(ok)), make([]int64, len(ok))
	for i, l := range ok {
		paths[i], sizes[i] = l.res.Source, l.remoteLen
	}
	touch(ctx)
	sums, verr := verifyRemote(ctx, c, sh, paths, sizes)
	for i, l := range ok {
		touch(ctx)
		r := l.res
		local, lerr := localHash(root, l.tmp)
		switch {
		case verr != nil:
			r.Status, r.Reason = FileError, verr.Error()
		case lerr != nil:
			r.Status, r.Reason = FileError, "re-read local copy: "+lerr.Error()
		case sums[i] != r.SHA256 || local != r.SHA256:
			r.Status, r.Reason = FileMismatch, fmt.Sprintf("remote sha256 %s, local sha256 %s", sums[i], local)
		default:
			if err := root.Rename(l.tmp, filepath.FromSlash(l.rel)); err != nil {
				r.Status, r.Reason = FileError, fmt.Sprintf("rename into place: %v", err)
			} else {
				r.Status = FileOK
			}
		}
		if r.Status != FileOK {
			_ = root.Remove(l.tmp)
		}
		res = append(res, r)
	}
	return res
}

func downloadOne(ctx context.Context, c *sftp.Client, root *os.Root, it collectItem, p *progress) (tmp string, n int64, sum string, err error) {
	dir := path.Dir(it.rel)
	if err := root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
		return "", 0, "", fmt.Errorf("mkdir %s: %w", dir, err)
	}
	rf, err := c.Open(it.remote)
	if err != nil {
		return "", 0, "", fmt.Errorf("open remote: %w", err)
	}
	defer rf.Close()
	tmp = filepath.FromSlash(path.Join(dir, "."+path.Base(it.rel)+".tmp-"+randSuffix()))
	lf, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", 0, "", fmt.Errorf("create local temp: %w", err)
	}
	h := sha256.New()
	// The size seen when listing bounds the copy: a log still growing is
	// collected as the prefix that existed when collect started.
	n, err = io.Copy(io.MultiWriter(lf, h, p), io.LimitReader(ctxReader{ctx, rf}, it.size))
	if cerr := lf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tmp, n, "", fmt.Errorf("download: %w", err)
	}
	return tmp, n, hex.EncodeToString(h.Sum(nil)), nil
}

func localHash(root *os.Root, name string) (string, error) {
	f, err := root.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var h hash.Hash = sha256.New()
	if _, err := io.Copy(h, bufio.NewReader(f)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HostDirName checks that a host name can be one local directory element
// (collect writes DIR/<host>/ for several hosts).
func HostDirName(host string) error {
	if err := checkName(host); err != nil {
		return fmt.Errorf("host %w", err)
	}
	if strings.HasPrefix(host, "-") || strings.HasPrefix(host, ".") {
		return fmt.Errorf("host name %q cannot be a directory name", host)
	}
	return nil
}

// Push uploads locals (files, or directories recursively) into remoteDir on
// every host, hosts in parallel (at most parallel at once, 0 = 8). A relative
// remoteDir is relative to the login home, as with scp. progress receives
// progress lines for files over 8 MiB; nil discards them. The error is
// non-nil only when nothing could be attempted; per-file failures are in
// the results.
func Push(ctx context.Context, pool *Pool, hosts []env.Host, locals []string, remoteDir string, parallel int, progress io.Writer) ([]FileResult, error) {
	if err := checkRemoteSource(remoteDir); err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	items, bad := expandLocals(locals)
	if parallel <= 0 {
		parallel = 8
	}
	var mu sync.Mutex
	var res []FileResult
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	lp := &lockedWriter{w: progress}
	for _, h := range hosts {
		g.Go(func() error {
			var rs []FileResult
			for _, b := range bad {
				b.Host = h.Name
				rs = append(rs, b)
			}
			if len(items) > 0 {
				rs = append(rs, pushOnHost(gctx, pool, h, items, remoteDir, lp)...)
			}
			mu.Lock()
			res = append(res, rs...)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	slices.SortStableFunc(res, func(a, b FileResult) int { return strings.Compare(a.Host, b.Host) })
	return res, nil
}

func pushOnHost(ctx context.Context, pool *Pool, h env.Host, items []pushItem, remoteDir string, progress io.Writer) []FileResult {
	c, err := pool.SFTP(ctx, h)
	if err != nil {
		rs := make([]FileResult, len(items))
		for i, it := range items {
			rs[i] = FileResult{Host: h.Name, Source: it.local, File: path.Join(sftpPath(remoteDir), it.rel), Status: FileError, Reason: err.Error()}
		}
		return rs
	}
	ctx, stop := pool.guardStall(ctx, h, c)
	defer stop()
	return pushHost(ctx, c, poolShell{pool, h}, h.Name, items, remoteDir, progress)
}

// Collect downloads the remote files and directories (recursively; symlinks
// are never followed) from host into intoDir, which is created if needed.
// Relative remote paths are relative to the login home. Every local write
// stays under intoDir.
func Collect(ctx context.Context, pool *Pool, host env.Host, remotes []string, intoDir string, progress io.Writer) ([]FileResult, error) {
	if err := os.MkdirAll(intoDir, 0o755); err != nil {
		return nil, fmt.Errorf("collect: create %s: %w", intoDir, err)
	}
	root, err := os.OpenRoot(intoDir)
	if err != nil {
		return nil, fmt.Errorf("collect: open %s: %w", intoDir, err)
	}
	defer root.Close()
	c, err := pool.SFTP(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("collect from %s: %w", host.Name, err)
	}
	ctx, stop := pool.guardStall(ctx, host, c)
	defer stop()
	return collectHost(ctx, c, poolShell{pool, host}, host.Name, remotes, root, &lockedWriter{w: progress}), nil
}

// lockedWriter serialises progress lines from parallel transfers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	if l.w == nil {
		return len(b), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// ResolveRemote validates a remote path argument and makes a relative one
// relative to workdir (absolute, per env.yml), so `jobs/S1` names the job
// dir on every host. "~/x" stays relative to the login home. The check
// comes before the join, so "jobs/../../etc" is refused, not cleaned.
func ResolveRemote(workdir, p string) (string, error) {
	if err := checkRemoteSource(p); err != nil {
		return "", err
	}
	if path.IsAbs(p) || p == "~" || strings.HasPrefix(p, "~/") || workdir == "" {
		return p, nil
	}
	return path.Join(workdir, p), nil
}
