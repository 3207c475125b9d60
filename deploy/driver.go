package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/dstgen/dstgen/internal/oneline"
)

// buildTimeout bounds one `go build` of the workload driver.
const buildTimeout = 5 * time.Minute

// DriverHosts are the hosts that run workloads: those of role client, plus
// parameters.bench_host.
func DriverHosts(hs []Host, benchHost string) []Host {
	var out []Host
	for _, h := range hs {
		if h.Name == benchHost || hasRole(h, "client") {
			out = append(out, h)
		}
	}
	return out
}

func hasRole(h Host, role string) bool {
	for _, r := range h.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// platform maps `uname -sm` to Go's GOOS/GOARCH.
func platform(uname string) (goos, goarch string, err error) {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "", "", fmt.Errorf("unexpected uname -sm output %q", uname)
	}
	goos = strings.ToLower(f[0])
	switch goos {
	case "linux", "freebsd", "openbsd", "netbsd":
	case "darwin":
	default:
		return "", "", fmt.Errorf("unsupported OS %q", f[0])
	}
	switch f[1] {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64":
		goarch = "arm64"
	case "armv7l", "armv6l":
		goarch = "arm"
	case "i386", "i686":
		goarch = "386"
	case "riscv64":
		goarch = "riscv64"
	case "ppc64le":
		goarch = "ppc64le"
	case "s390x":
		goarch = "s390x"
	default:
		return "", "", fmt.Errorf("unsupported machine %q", f[1])
	}
	return goos, goarch, nil
}

// UploadDriver builds the Go workload driver in benchmark.driver once per
// OS/arch the client hosts report, statically (CGO_ENABLED=0), and uploads
// it to <workdir>/bin on each of them. The control node keeps nothing but
// a temporary directory, removed on return.
func (d *Deployer) UploadDriver(ctx context.Context, hs []Host) error {
	dir := d.Env.Benchmark.Driver
	if dir == "" {
		d.printf("driver=none reason=%s", "'benchmark.driver is empty: the benchmark command needs no upload'")
		return nil
	}
	if len(hs) == 0 {
		return fmt.Errorf("benchmark.driver is set but no host has role client or is parameters.bench_host")
	}
	return d.buildAndPush(ctx, dir, "driver", hs)
}

// buildAndPush builds the Go main package in dir once per OS/arch the
// hosts report, statically, and uploads it to each host's <workdir>/bin as
// the package dir's name; what names it in the lines printed ("driver",
// "artifact").
func (d *Deployer) buildAndPush(ctx context.Context, dir, what string, hs []Host) error {
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("build %s %s: the go toolchain is not on PATH of the control node", what, dir)
	}
	tmp, err := os.MkdirTemp("", "dstgen-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	built := map[string]string{}
	for _, h := range hs {
		uname, err := d.Run(ctx, h, "uname -sm")
		if err != nil {
			return fmt.Errorf("host %s: uname: %w", h.Name, err)
		}
		goos, goarch, err := platform(strings.TrimSpace(uname))
		if err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		key := goos + "_" + goarch
		bin, ok := built[key]
		if !ok {
			bin = filepath.Join(tmp, key, filepath.Base(dir))
			if err := goBuild(ctx, dir, bin, goos, goarch); err != nil {
				return err
			}
			built[key] = bin
			d.printf("%s=%s built=%s", what, quoteRel(d, dir), key)
		}
		if err := d.push(ctx, []Host{h}, func(h Host) string { return path.Join(h.Workdir, "bin") }, bin); err != nil {
			return err
		}
	}
	return nil
}

// goPackageDir reports whether p is a directory of Go files: an artifact
// deploy builds per host rather than uploads as it is.
func goPackageDir(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(p, "*.go"))
	return len(m) > 0
}

func quoteRel(d *Deployer, p string) string { return displayPath(d.Env, p) }

func goBuild(ctx context.Context, dir, out, goos, goarch string) error {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s/%s: %v: %s", dir, goos, goarch, err, oneline.Fold(string(b)))
	}
	return nil
}
