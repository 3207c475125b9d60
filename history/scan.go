package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// blockSize is how much of a history file Scan reads and parses at a
// time: big enough that the parse splits well across cores, small enough
// that a million-transaction history never sits in memory whole.
const blockSize = 4 << 20

// Block is one stretch of a history as Scan hands it over: its ops in
// file order and its bad lines (each a *fileline.Error).
type Block struct {
	Ops  []Op
	Bad  []error
	Size int // bytes of the file the block covers
}

// ScanFile reads the history at path a block at a time and calls fn with
// each block, in file order, while the next block is read and parsed on
// the other cores. The ops' Input and Output alias a buffer that is
// reused once fn returns: fn copies what it keeps. meta is the _meta
// header (known from the first block on). An error from fn stops the
// scan and is returned as it is.
func ScanFile(path string, fn func(meta Meta, b Block) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	return scan(f, path, blockSize, fn)
}

type scanned struct {
	meta Meta
	b    Block
	buf  *scanBuf
	err  error // reading failed
}

// scanBuf is a block's bytes and ops, reused once its block is consumed.
type scanBuf struct {
	data []byte
	ops  []Op
}

// scan is ScanFile over r, with blocks of size bytes (a line longer than
// a block makes its block longer, up to MaxLineBytes).
func scan(r io.Reader, name string, size int, fn func(Meta, Block) error) error {
	out := make(chan scanned, 1)
	free := make(chan *scanBuf, 3)
	for range cap(free) {
		free <- &scanBuf{data: make([]byte, 0, size)}
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(out)
		send := func(s scanned) bool {
			select {
			case out <- s:
				return true
			case <-stop:
				return false
			}
		}
		var parser blockParser
		var carry []byte // the start of a line the last block cut
		line, first, eof := 0, true, false
		for !eof {
			var bp *scanBuf
			select {
			case bp = <-free:
			case <-stop:
				return
			}
			buf := append(bp.data[:0], carry...)
			carry = carry[:0]
			tooLong := false
			// Fill the block up to size and on to the end of a line.
			for {
				if len(buf) == cap(buf) {
					buf = append(buf, 0)[:len(buf)]
				}
				n, err := r.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
				if err != nil && !errors.Is(err, io.EOF) {
					send(scanned{err: fmt.Errorf("read %s: %w", name, err)})
					return
				}
				eof = err != nil
				if eof || len(buf) >= size && bytes.LastIndexByte(buf, '\n') >= 0 {
					break
				}
				if len(buf) > MaxLineBytes && bytes.IndexByte(buf, '\n') < 0 {
					tooLong = true
					break
				}
			}
			if tooLong {
				// One line over the limit: report it, drop it up to its
				// newline, and go on after it.
				for !eof {
					n, err := r.Read(buf[:cap(buf)])
					if err != nil && !errors.Is(err, io.EOF) {
						send(scanned{err: fmt.Errorf("read %s: %w", name, err)})
						return
					}
					eof = err != nil
					if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
						carry = append(carry, buf[i+1:n]...)
						break
					}
				}
				line++
				bp.data = buf[:0]
				if !send(scanned{b: Block{Bad: []error{lineError(name, line, fmt.Errorf("line longer than %d bytes", MaxLineBytes))}, Size: MaxLineBytes}, buf: bp}) {
					return
				}
				continue
			}
			block := buf
			if !eof {
				cut := bytes.LastIndexByte(buf, '\n') + 1
				block = buf[:cut]
				carry = append(carry, buf[cut:]...)
			}
			bp.data = buf
			parser.ops = bp.ops
			meta, hasMeta, ops, bad := parser.parse(block, name, line, first)
			bp.ops = ops[:cap(ops)]
			line += bytes.Count(block, []byte{'\n'})
			// The _meta line may follow blank lines only.
			first = first && len(ops) == 0 && len(bad) == 0 && !hasMeta
			if !send(scanned{meta: meta, b: Block{Ops: ops, Bad: bad, Size: len(block)}, buf: bp}) {
				return
			}
		}
	}()
	var meta Meta
	for s := range out {
		if s.err != nil {
			return s.err
		}
		if s.meta != (Meta{}) {
			meta = s.meta
		}
		err := fn(meta, s.b)
		free <- s.buf
		if err != nil {
			return err
		}
	}
	return nil
}
