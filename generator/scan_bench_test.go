package generator

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchTreeFiles is the size of the generated tree BenchmarkScan walks.
const benchTreeFiles = 50000

// genBenchTree writes a realistic 50k-file repository: nested source dirs of
// small files, a few build files, units, config templates, docs and scripts
// the scanner must read, plus a node_modules and a .git it must skip.
// It returns the number of files written.
func genBenchTree(tb testing.TB, root string) int {
	tb.Helper()
	n := 0
	write := func(rel, content string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	write("go.mod", "module example.com/big\n\ngo 1.22\n")
	write("Makefile", "build:\n\tgo build -o bin/big ./cmd/big\ncluster-up:\n\t./scripts/up.sh\nchaos:\n\t./tools/partition.sh\n")
	write("README.md", "# big\n\n## Install\n\n```sh\nmake build\nsudo cp bin/big /usr/local/bin/\n```\n\n## Deploy\n\n```sh\nsudo systemctl enable --now big\n```\n")
	write("config.yaml.example", "listen: :1\npeers: []\n")
	write(".github/workflows/chaos.yml", "jobs:\n  x:\n    steps:\n      - run: sudo tc qdisc add dev lo root netem delay 1ms\n")
	for i := 0; i < 10; i++ {
		write(fmt.Sprintf("cmd/tool%d/main.go", i), "package main\n\nfunc main() {}\n")
		write(fmt.Sprintf("tools/t%d.sh", i), "#!/bin/sh\niptables -L\n")
		write(fmt.Sprintf("scripts/s%d.sh", i), "#!/bin/sh\necho hi\n")
		write(fmt.Sprintf("tests/integration/case%d_test.go", i), "package integration\n")
	}
	skipped := benchTreeFiles / 10 // node_modules + .git
	for i := 0; i < skipped*6/10; i++ {
		write(fmt.Sprintf("node_modules/pkg%d/lib/f%d.js", i/20, i), "module.exports = 1\n")
	}
	for i := 0; i < skipped*4/10; i++ {
		write(fmt.Sprintf(".git/objects/%02x/%038x", i%256, i), "blob")
	}
	exts := []string{".go", ".go", ".go", ".rs", ".c", ".h", ".md", ".txt", ".json", ".py"}
	for i := 0; n < benchTreeFiles; i++ {
		dir := fmt.Sprintf("pkg/a%d/b%d/c%d", i%23, (i/23)%11, (i/253)%9)
		switch {
		case i%997 == 0:
			write(dir+"/Makefile", "all:\n\tcc -o x x.c\nbench:\n\t./bench\n")
		case i%1499 == 0:
			write(dir+"/svc.service", "[Unit]\nAfter=network.target\n[Service]\nExecStart=/usr/bin/svc\n")
		case i%1201 == 0:
			write(dir+"/settings.toml.sample", "a = 1\n[b]\n")
		default:
			write(fmt.Sprintf("%s/f%d%s", dir, i, exts[i%len(exts)]), "package x\n\n// filler source file\nfunc f() int { return 1 }\n")
		}
	}
	return n
}

// BenchmarkScan compares Scan with a bare filepath.WalkDir of the same tree
// in the same run (goal: Scan ≤ 1.5× walkdir). walkdir-skip is WalkDir
// skipping the same dirs Scan skips, the stricter comparison: it isolates
// the cost of classifying names and reading candidates.
func BenchmarkScan(b *testing.B) {
	root := b.TempDir()
	files := genBenchTree(b, root)
	ctx := context.Background()
	// Flush the freshly written tree and warm the dentry cache once, so the
	// first sub-benchmark does not pay for writeback the others skip.
	syscall.Sync()
	if err := filepath.WalkDir(root, func(string, fs.DirEntry, error) error { return nil }); err != nil {
		b.Fatal(err)
	}
	b.Run("dstgen", func(b *testing.B) {
		for b.Loop() {
			p, err := Scan(ctx, root, ScanOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Units) == 0 || len(p.Toolbox) == 0 {
				b.Fatal("scan found nothing")
			}
		}
		b.ReportMetric(float64(files), "files")
	})
	b.Run("walkdir", func(b *testing.B) {
		for b.Loop() {
			seen := 0
			err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.IsDir() {
					seen++
				}
				return nil
			})
			if err != nil || seen != files {
				b.Fatalf("walk saw %d of %d files: %v", seen, files, err)
			}
		}
	})
	// interleaved runs both in every iteration, so machine noise hits both
	// alike, and reports dstgen's time as a multiple of the bare walk's.
	b.Run("interleaved", func(b *testing.B) {
		var scanT, walkT time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := Scan(ctx, root, ScanOptions{}); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := filepath.WalkDir(root, func(string, fs.DirEntry, error) error { return nil }); err != nil {
				b.Fatal(err)
			}
			scanT += t1.Sub(t0)
			walkT += time.Since(t1)
		}
		b.ReportMetric(float64(scanT)/float64(walkT), "dstgen/walkdir")
	})
	b.Run("walkdir-skip", func(b *testing.B) {
		for b.Loop() {
			err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() && skipDirName(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
