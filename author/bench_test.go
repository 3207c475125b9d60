package author

import (
	"context"
	"os/exec"
	"testing"
)

var benchSrc = []byte("package x\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n    // TODO\n    _ = t\n}\n")

// BenchmarkFormatGoInProcess is the formatter author mode runs for Go:
// go/format, gofmt's own library.
func BenchmarkFormatGoInProcess(b *testing.B) {
	for b.Loop() {
		if _, _, err := formatSource(context.Background(), languages["go"], b.TempDir(), "x_test.go", benchSrc, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFormatGoExec is the obvious alternative: gofmt as a filter
// process, as the other languages' formatters run.
func BenchmarkFormatGoExec(b *testing.B) {
	if _, err := exec.LookPath("gofmt"); err != nil {
		b.Skip("gofmt not installed")
	}
	for b.Loop() {
		if _, err := runTool(context.Background(), toolTimeout, b.TempDir(), benchSrc, "gofmt"); err != nil {
			b.Fatal(err)
		}
	}
}
