package orchestrator

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dstgen/dstgen/internal/atomicfile"
	"github.com/dstgen/dstgen/session"
)

// sessionWriter is one session directory being written: the layout of
// session/doc.go, an append-only session-log.md, and run records written
// atomically (a reader never sees half a run.json).
type sessionWriter struct {
	Dir string
	// Out receives every progress line, as it is appended to the log.
	Out io.Writer

	mu sync.Mutex
}

// openSession creates dir with logs/, metrics/ and artifacts/ and, when
// it has none yet, the session log with its header (docs/report-format.md
// §2: title, plan, session dir).
func openSession(dir, planSlug, planPath string, out io.Writer) (*sessionWriter, error) {
	for _, d := range []string{session.LogsDir, session.MetricsDir, session.ArtifactsDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("create session dir: %w", err)
		}
	}
	s := &sessionWriter{Dir: dir, Out: out}
	logPath := filepath.Join(dir, session.SessionLog)
	if _, err := os.Stat(logPath); os.IsNotExist(err) {
		if planSlug == "" {
			planSlug = "(no plan)"
		}
		head := fmt.Sprintf("# Session log: %s @ %s\n\n**Plan:** %s\n**Session dir:** %s\n\n## Timeline\n\n",
			planSlug, filepath.Base(dir), planPath, dir)
		if err := os.WriteFile(logPath, []byte(head), 0o644); err != nil {
			return nil, fmt.Errorf("create session log: %w", err)
		}
	}
	return s, nil
}

// Logf appends one timestamped line to session-log.md and prints it to
// Out. A log that cannot be written is reported on Out, never fatal: the
// run record matters more than its diary.
func (s *sessionWriter) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Out != nil {
		fmt.Fprintln(s.Out, line)
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, session.SessionLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		if s.Out != nil {
			fmt.Fprintf(s.Out, "warning: session log: %v\n", err)
		}
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "- %s %s\n", time.Now().UTC().Format(time.RFC3339), line)
}

// ArtifactDir is artifacts/<ID>/ of a unit ("S4/api" → artifacts/S4/api/).
func (s *sessionWriter) ArtifactDir(unit string) string {
	return filepath.Join(s.Dir, session.ArtifactsDir, filepath.FromSlash(unit))
}

// writeRun writes r as path atomically (temp file + rename), so a run
// killed mid-write leaves the previous record.
func writeRun(path string, r *session.Run) error {
	r.Schema = session.RunSchema
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}
