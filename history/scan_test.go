package history

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// scanAll collects what scan hands over with blocks of size bytes.
func scanAll(t *testing.T, data []byte, size int) (Meta, []Op, []error) {
	t.Helper()
	var meta Meta
	var ops []Op
	var bad []error
	err := scan(bytes.NewReader(data), "h.jsonl", size, func(m Meta, b Block) error {
		meta = m
		for _, op := range b.Ops {
			// The block's buffer is reused: keep copies.
			op.Input, op.Output = bytes.Clone(op.Input), bytes.Clone(op.Output)
			ops = append(ops, op)
		}
		bad = append(bad, b.Bad...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return meta, ops, bad
}

// scanInputs are histories with the lines a scan must cut right: bad
// lines, blank lines, CRLF, a last line without newline, a _meta header
// after a blank line, a misplaced one.
func scanInputs() []string {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("\n" + `{"_meta":{"scenario":"S","schema":"dst-history/1"}}` + "\n")
	for i := range 300 {
		line := strings.Replace(goodLine, `"op_id":"1"`, fmt.Sprintf(`"op_id":"%d"`, i+1), 1)
		switch rng.IntN(12) {
		case 0:
			line = "garbage"
		case 1:
			line = ""
		case 2:
			line += "\r"
		case 3:
			line = strings.Replace(line, `{"v":[1,2]}`, `{"v":[1,2`+strings.Repeat(",3", rng.IntN(200))+`]}`, 1)
		case 4:
			line = `{"_meta":{}}`
		}
		b.WriteString(line + "\n")
	}
	all := b.String()
	return []string{all, strings.TrimSuffix(all, "\n"), "", "\n\n", goodLine, `{"_meta":{}}` + "\n" + goodLine + "\n" + `{"_meta":{}}`}
}

// TestScanAgreesWithReadBytes: whatever the block size, a scan yields the
// ops, bad lines (with their line numbers) and header ReadBytes reads from
// the same bytes; so does ReadFile.
func TestScanAgreesWithReadBytes(t *testing.T) {
	for n, in := range scanInputs() {
		wantMeta, wantOps, wantBad := ReadBytes([]byte(in), "h.jsonl")
		for _, size := range []int{1, 7, 100, 4096, blockSize} {
			meta, ops, bad := scanAll(t, []byte(in), size)
			if meta != wantMeta {
				t.Errorf("input %d size %d: meta %+v, want %+v", n, size, meta, wantMeta)
			}
			if len(ops) != len(wantOps) || len(ops) > 0 && !reflect.DeepEqual(ops, wantOps) {
				t.Fatalf("input %d size %d: %d ops, want %d", n, size, len(ops), len(wantOps))
			}
			if fmt.Sprint(bad) != fmt.Sprint(wantBad) {
				t.Fatalf("input %d size %d: bad %v\nwant %v", n, size, bad, wantBad)
			}
			meta, ops, bad, err := readBlocks(strings.NewReader(in), "h.jsonl", int64(len(in)), size)
			if err != nil || meta != wantMeta || len(ops) != len(wantOps) || len(ops) > 0 && !reflect.DeepEqual(ops, wantOps) || fmt.Sprint(bad) != fmt.Sprint(wantBad) {
				t.Fatalf("input %d size %d: readBlocks differs from ReadBytes (err %v, %d ops, bad %v)", n, size, err, len(ops), bad)
			}
		}
		path := filepath.Join(t.TempDir(), "h.jsonl")
		if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		meta, ops, bad, err := ReadFile(path)
		if err != nil || meta != wantMeta || len(ops) != len(wantOps) || len(ops) > 0 && !reflect.DeepEqual(ops, wantOps) || strings.ReplaceAll(fmt.Sprint(bad), path, "h.jsonl") != fmt.Sprint(wantBad) {
			t.Fatalf("input %d: ReadFile differs from ReadBytes (err %v)", n, err)
		}
	}
}

// TestScanOverlongLine: a line past MaxLineBytes is one error at its line
// (for a scan, in a block of its own), and the lines after it are read.
func TestScanOverlongLine(t *testing.T) {
	long := `{"op_id":"` + strings.Repeat("x", MaxLineBytes) + `"}`
	data := []byte(goodLine + "\n" + long + "\n" + strings.Replace(goodLine, `"1"`, `"2"`, 1) + "\n")
	for _, size := range []int{100, blockSize} {
		_, ops, bad := scanAll(t, data, size)
		if len(ops) != 2 || ops[1].Line != 3 || len(bad) != 1 || bad[0].Error() != "h.jsonl:2: line longer than 16777216 bytes" {
			t.Fatalf("size %d: %d ops, bad %v", size, len(ops), bad)
		}
		_, ops, bad, err := readBlocks(bytes.NewReader(data), "h.jsonl", int64(len(data)), size)
		if err != nil || len(ops) != 2 || ops[1].Line != 3 || len(bad) != 1 || bad[0].Error() != "h.jsonl:2: line longer than 16777216 bytes" {
			t.Fatalf("readBlocks, size %d: %d ops, bad %v, err %v", size, len(ops), bad, err)
		}
	}
}

// TestScanStopsOnError: an error from the callback ends the scan.
func TestScanStopsOnError(t *testing.T) {
	in := strings.Repeat(goodLine+"\n", 1000)
	calls := 0
	err := scan(strings.NewReader(in), "h", 500, func(Meta, Block) error {
		calls++
		return fmt.Errorf("enough")
	})
	if err == nil || err.Error() != "enough" || calls != 1 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

func FuzzScan(f *testing.F) {
	for _, in := range scanInputs() {
		f.Add([]byte(in), uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		wantMeta, wantOps, wantBad := ReadBytes(data, "h.jsonl")
		meta, ops, bad := scanAll(t, data, int(size)+1)
		if meta != wantMeta || len(ops) != len(wantOps) || len(ops) > 0 && !reflect.DeepEqual(ops, wantOps) || fmt.Sprint(bad) != fmt.Sprint(wantBad) {
			t.Fatalf("scan with blocks of %d: meta %+v, %d ops, bad %v; ReadBytes: %+v, %d ops, bad %v", int(size)+1, meta, len(ops), bad, wantMeta, len(wantOps), wantBad)
		}
	})
}
