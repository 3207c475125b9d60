package generator

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkFindClaims is the claim scan of examples/etcd (fewer claims
// than the cap, so both read the whole tree) against the obvious
// alternative: walk every file and match the patterns on every line (what
// grep -rE does), with no skip rules, no comment filter and no sentence
// joining.
func BenchmarkFindClaims(b *testing.B) {
	root, err := filepath.Abs("../examples/etcd")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	p := &Profile{Root: root}
	b.Run("FindClaims", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := FindClaims(ctx, p, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("grep-every-line", func(b *testing.B) {
		for b.Loop() {
			n := 0
			err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return nil
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return nil
				}
				for _, line := range strings.Split(string(data), "\n") {
					for _, pt := range promiseTerms {
						if pt.re.MatchString(line) {
							n++
							break
						}
					}
				}
				return nil
			})
			if err != nil || n == 0 {
				b.Fatal(err, n)
			}
		}
	})
}
