package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/dstgen/dstgen/internal/fileline"
)

// MaxLineBytes bounds one history line; a longer line is reported and
// skipped rather than buffered without limit.
const MaxLineBytes = 16 << 20

// Reader streams ops from a JSON Lines history. A bad line yields a
// *fileline.Error from Next and reading continues with the following line, so
// the caller decides whether partial results are usable.
type Reader struct {
	br      *bufio.Reader
	name    string
	line    int
	meta    Meta
	hasMeta bool
	seenOp  bool
	intern  *interner
	slab    []int64
	scratch []byte
	// src, when set, is the whole input in memory: lines are sliced from it
	// and ops keep referring to it instead of copying each line.
	src []byte
	pos int
}

// newReader reads a history from r; name is used in error positions
// (usually the file path).
func newReader(r io.Reader, name string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 1<<16), name: name, intern: newInterner()}
}

// Meta returns the _meta header and whether the file had one. It is known
// once Next has returned at least once.
func (r *Reader) Meta() (Meta, bool) { return r.meta, r.hasMeta }

// readLine returns the next line without its newline; tooLong reports a
// line over MaxLineBytes (already skipped).
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	if r.src != nil {
		if r.pos >= len(r.src) {
			return nil, false, io.EOF
		}
		end := len(r.src)
		if nl := bytes.IndexByte(r.src[r.pos:], '\n'); nl >= 0 {
			end = r.pos + nl
		}
		line, r.pos = r.src[r.pos:end], end+1
		r.line++
		return bytes.TrimRight(line, "\r"), len(line) > MaxLineBytes, nil
	}
	r.scratch = r.scratch[:0]
	for {
		frag, e := r.br.ReadSlice('\n')
		if len(r.scratch)+len(frag) > MaxLineBytes {
			tooLong = true
		} else {
			r.scratch = append(r.scratch, frag...)
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		if e != nil && len(r.scratch) == 0 && !tooLong {
			return nil, false, e
		}
		r.line++
		return bytes.TrimRight(r.scratch, "\r\n"), tooLong, nil
	}
}

// Next returns the next op. It returns io.EOF at the end, a *fileline.Error for a
// line that is not a valid op (call Next again to continue), or another
// error when the underlying reader fails.
func (r *Reader) Next() (Op, error) {
	for {
		line, tooLong, err := r.readLine()
		if err == io.EOF {
			return Op{}, io.EOF
		}
		if err != nil {
			return Op{}, fmt.Errorf("read %s: %w", r.name, err)
		}
		if tooLong {
			return Op{}, r.lineErr(fmt.Errorf("line longer than %d bytes", MaxLineBytes))
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if isMeta(line) {
			if r.seenOp || r.hasMeta {
				return Op{}, r.lineErr(errors.New(`"_meta" record allowed only on the first line`))
			}
			var h struct {
				Meta *Meta `json:"_meta"`
			}
			if err := json.Unmarshal(line, &h); err != nil || h.Meta == nil {
				if err == nil {
					err = errors.New("_meta is not an object")
				}
				return Op{}, r.lineErr(fmt.Errorf("bad _meta record: %v", err))
			}
			r.meta, r.hasMeta = *h.Meta, true
			if r.meta.Schema != "" && r.meta.Schema != Schema {
				return Op{}, r.lineErr(fmt.Errorf("unsupported schema %q (want %q)", r.meta.Schema, Schema))
			}
			continue
		}
		r.seenOp = true
		op, err := parseOp(line, r.intern, &r.slab, r.src == nil)
		if err != nil {
			return Op{}, r.lineErr(err)
		}
		op.Line = r.line
		return op, nil
	}
}

func (r *Reader) lineErr(err error) error {
	return lineError(r.name, r.line, err)
}

// lineError is the *fileline.Error of a history line; a history without a
// name is called "history" in positions.
func lineError(name string, line int, err error) *fileline.Error {
	if name == "" {
		name = "history"
	}
	return &fileline.Error{File: name, Line: line, Err: err}
}

func isMeta(line []byte) bool {
	i := 1
	for i < len(line) && isSpace(line[i]) {
		i++
	}
	return len(line) > 0 && line[0] == '{' && bytes.HasPrefix(line[i:], []byte(`"_meta"`))
}

// readAll reads a whole history. Bad lines are returned as errors beside the
// ops that did parse; err is non-nil only when r itself fails.
func readAll(r io.Reader, name string) (meta Meta, ops []Op, bad []error, err error) {
	rd := newReader(r, name)
	for {
		op, e := rd.Next()
		if e == io.EOF {
			break
		}
		var le *fileline.Error
		if errors.As(e, &le) {
			bad = append(bad, e)
			continue
		}
		if e != nil {
			meta, _ = rd.Meta()
			return meta, ops, bad, e
		}
		ops = append(ops, op)
	}
	meta, _ = rd.Meta()
	return meta, ops, bad, nil
}

// ReadFile reads a history file: the ops and the bad lines as ReadBytes
// gives them for the file's bytes. It reads a block at a time, parsing
// each block while the next is read, and keeps only the ops (each op's
// input and output copied out of its block): the file is never in memory
// whole.
func ReadFile(path string) (Meta, []Op, []error, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, nil, nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return readBlocks(f, path, size, blockSize)
}

// own copies raw into arena (which has room for it) and returns the copy.
func own(raw json.RawMessage, arena []byte) (json.RawMessage, []byte) {
	if raw == nil {
		return nil, arena
	}
	n := len(arena)
	arena = append(arena, raw...)
	return json.RawMessage(arena[n:len(arena):len(arena)]), arena
}

// parallelMin is the size below which ReadBytes parses on one goroutine.
const parallelMin = 1 << 20

// ReadBytes parses a history held in memory, splitting it at line
// boundaries across GOMAXPROCS goroutines: parsing dominated analyze time
// before the check, and lines are independent. Results, errors and line
// numbers are as readAll's. Input and Output of the ops alias data, which the
// caller must not modify afterwards.
func ReadBytes(data []byte, name string) (Meta, []Op, []error) {
	var b blockParser
	meta, _, ops, bad := b.parse(data, name, 0, true)
	return meta, ops, bad
}

// blockParser parses blocks of lines in parallel; its interners (one per
// goroutine) carry over from block to block, so a value repeated through
// a history is one string throughout.
type blockParser struct {
	interners []*interner
	ops       []Op // reused between blocks when the caller allows it
	// own makes each op's input and output a copy (one allocation per
	// goroutine), so the block's bytes can be reused.
	own bool
}

// parse parses data, whose first line is line firstLine+1 of the history;
// first says it starts the history (the only place a _meta line may be).
func (b *blockParser) parse(data []byte, name string, firstLine int, first bool) (meta Meta, hasMeta bool, ops []Op, bad []error) {
	if len(data) == 0 {
		return Meta{}, false, nil, nil
	}
	n := runtime.GOMAXPROCS(0)
	if len(data) < parallelMin {
		n = 1
	}
	for len(b.interners) < n {
		b.interners = append(b.interners, newInterner())
	}
	type chunk struct {
		data      []byte
		firstLine int
		ops       []Op // a window of the shared result, one slot per line
		bad       []error
		meta      Meta
		hasMeta   bool
	}
	// Every line yields at most one op, so counting newlines sizes the
	// result exactly and each chunk fills its own window of it: no growth,
	// no merge copy.
	lines := bytes.Count(data, []byte{'\n'}) + 1
	all := b.ops[:0]
	if cap(all) < lines {
		all = make([]Op, lines)
	}
	all = all[:lines] // a reused slice: every op appended below is whole
	chunks := make([]*chunk, 0, n)
	start, line := 0, 0
	for i := 1; i <= n && start < len(data); i++ {
		end := len(data)
		if i < n {
			end = max(len(data)*i/n, start)
			if nl := bytes.IndexByte(data[end:], '\n'); nl >= 0 {
				end += nl + 1
			} else {
				end = len(data)
			}
		}
		cl := bytes.Count(data[start:end], []byte{'\n'})
		chunks = append(chunks, &chunk{data: data[start:end], firstLine: firstLine + line, ops: all[line : line : line+cl+1]})
		line += cl
		start = end
	}
	var wg sync.WaitGroup
	for i, c := range chunks {
		in := b.interners[i]
		wg.Go(func() {
			rd := &Reader{src: c.data, name: name, intern: in, line: c.firstLine}
			rd.seenOp = i > 0 || !first // _meta belongs on the file's first line only
			for {
				op, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					c.bad = append(c.bad, err)
					continue
				}
				c.ops = append(c.ops, op)
			}
			c.meta, c.hasMeta = rd.Meta()
			if b.own {
				raw := 0
				for i := range c.ops {
					raw += len(c.ops[i].Input) + len(c.ops[i].Output)
				}
				arena := make([]byte, 0, raw)
				for i := range c.ops {
					c.ops[i].Input, arena = own(c.ops[i].Input, arena)
					c.ops[i].Output, arena = own(c.ops[i].Output, arena)
				}
			}
		})
	}
	wg.Wait()
	// Close the gaps left by blank, meta and bad lines.
	ops = all[:0]
	for _, c := range chunks {
		ops = append(ops, c.ops...) // copy within all; never overlaps forward
		bad = append(bad, c.bad...)
	}
	clear(all[len(ops):])
	return chunks[0].meta, chunks[0].hasMeta, ops, bad
}

// readBlocks reads all of r (about size bytes) in blocks of about block
// bytes, parsing each while the next is read, straight into the result
// (no copy of the ops), then copying the block's inputs and outputs out
// so its buffer can take the next block: ReadBytes of the whole without
// the whole in memory.
func readBlocks(r io.Reader, name string, size int64, block int) (Meta, []Op, []error, error) {
	type piece struct {
		data []byte
		err  error
	}
	pieces := make(chan piece, 2)
	free := make(chan []byte, 3)
	for range cap(free) {
		free <- make([]byte, 0, block)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(pieces)
		var carry []byte
		for eof := false; !eof; {
			var buf []byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			buf = append(buf[:0], carry...)
			for {
				if len(buf) == cap(buf) {
					buf = append(buf, 0)[:len(buf)]
				}
				n, err := r.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
				if err != nil && !errors.Is(err, io.EOF) {
					select {
					case pieces <- piece{err: fmt.Errorf("read %s: %w", name, err)}:
					case <-stop:
					}
					return
				}
				eof = err != nil
				if eof || len(buf) >= block && bytes.LastIndexByte(buf, '\n') >= 0 {
					break
				}
			}
			cut := len(buf)
			if !eof {
				cut = bytes.LastIndexByte(buf, '\n') + 1
			}
			carry = slices.Clone(buf[cut:])
			select {
			case pieces <- piece{data: buf[:cut]}:
			case <-stop:
				return
			}
		}
	}()
	parser := blockParser{own: true}
	var meta Meta
	var all []Op
	var bad []error
	line, first := 0, true
	for p := range pieces {
		if p.err != nil {
			return meta, all, bad, p.err
		}
		if len(p.data) == 0 {
			continue
		}
		lines := bytes.Count(p.data, []byte{'\n'}) + 1
		if all == nil {
			// Sized from the first block's line count, so the ops rarely
			// move again.
			all = make([]Op, 0, int(float64(size)/float64(len(p.data))*float64(lines)*1.05)+16)
		}
		all = slices.Grow(all, lines)
		// The block's ops are parsed straight into the result's free
		// room: no copy of them.
		parser.ops = all[len(all):cap(all)]
		// The ops keep copies of their input and output (parser.own),
		// so the block's buffer goes back to the reader.
		m, hasMeta, ops, b := parser.parse(p.data, name, line, first)
		line += lines - 1
		free <- p.data[:0]
		all = all[:len(all)+len(ops)]
		bad = append(bad, b...)
		if hasMeta {
			meta = m
		}
		first = first && len(ops) == 0 && len(b) == 0 && !hasMeta
	}
	return meta, slices.Clip(all), bad, nil
}
