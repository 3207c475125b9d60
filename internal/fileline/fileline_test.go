package fileline

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	cause := errors.New("boom")
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{Errorf("env.yml", 12, "bad %s", "port"), "env.yml:12: bad port"},
		{Errorf("plan.md", 0, "empty"), "plan.md: empty"},
		{Errorf("h.jsonl", 3, "decode: %w", cause), "h.jsonl:3: decode: boom"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	var fe *Error
	if err := error(Errorf("h.jsonl", 3, "decode: %w", cause)); !errors.As(err, &fe) || fe.Line != 3 || !errors.Is(err, cause) {
		t.Errorf("errors.As/Is through *Error failed: %v", err)
	}
}

func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadBounded(p, 10); err != nil || len(b) != 10 {
		t.Errorf("at the limit: %d bytes, %v", len(b), err)
	}
	if _, err := ReadBounded(p, 9); !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), p+": file too large") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadBounded(filepath.Join(dir, "missing"), 9); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadBounded("/dev/zero", 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/dev/zero is bounded: %v", err)
	}
}
