package orchestrator

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dstgen/dstgen/session"
)

// logMarkers are the error markers a run looks for in the SUT logs it
// collected: a crash or a fatal log line that the history may not show
// (docs/verdicts.md §6 check 7, docs/dst-run.md §7). They are the ones
// Go, zap, logrus, glog and Java programs write when they die.
var logMarkers = []string{
	`panic:`, `"level":"panic"`, `"level":"fatal"`, `level=fatal`, `level=panic`,
	`fatal error:`, `SIGSEGV`, `WARNING: DATA RACE`, `^F[0-9]{4} `, `Exception in thread`,
}

const (
	maxLogHits     = 20
	maxLogLineScan = 1 << 20 // a longer line is skipped, not split
)

// scanLogs counts the lines of the files under dirs (the collected SUT
// logs) that match a marker, citing the first hits as
// "<path relative to the session>:<line>: <text>". No marker is accounted
// for by an oracle here (the run's checkers read the history, not logs).
func scanLogs(sessionDir string, dirs []string) (*session.LogScan, error) {
	re := regexp.MustCompile(strings.Join(logMarkers, "|"))
	ls := &session.LogScan{Markers: logMarkers}
	scanned := 0
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if e.IsDir() || !e.Type().IsRegular() {
				return nil
			}
			scanned++
			return scanFile(sessionDir, p, re, ls)
		})
		if err != nil {
			return ls, fmt.Errorf("scan SUT logs in %s: %w", d, err)
		}
	}
	if scanned == 0 {
		return nil, nil // nothing collected: the scan did not happen
	}
	return ls, nil
}

func scanFile(sessionDir, p string, re *regexp.Regexp, ls *session.LogScan) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	rel, err := filepath.Rel(sessionDir, p)
	if err != nil {
		rel = p
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), maxLogLineScan)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !re.MatchString(line) {
			continue
		}
		ls.Found++
		if len(ls.Hits) < maxLogHits {
			if len(line) > 200 {
				line = line[:200] + "…"
			}
			ls.Hits = append(ls.Hits, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), n, line))
		}
	}
	if err := sc.Err(); err != nil && err != bufio.ErrTooLong {
		return fmt.Errorf("read %s: %w", p, err)
	}
	return nil
}
