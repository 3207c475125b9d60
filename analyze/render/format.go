// Package render holds the pieces every report writer shares (Markdown
// cells and tables, the self-contained HTML page and its SVG charts,
// figure formatting, the atomic file write), so the session analysis and
// the benchmark-run analysis render alike without depending on each other.
package render

// Number and list formatting and the file writer shared by every report.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// File names of the report files every analysis writes.
const (
	MarkdownFile = "report.md"
	JSONFile     = "report.json"
	HTMLFile     = "report.html"
)

// FmtOpt formats an optional figure with one decimal and its unit; nil shows an em dash.
func FmtOpt(p *float64, unit string) string {
	if p == nil {
		return "—"
	}
	return strings.TrimSpace(fmt.Sprintf("%.1f%s", *p, unit))
}

// DeltaPct is the signed percent change from b to a, " (+12%)", or "" when either is missing or b is 0.
func DeltaPct(b, a *float64) string {
	if b == nil || a == nil || *b == 0 {
		return ""
	}
	return fmt.Sprintf(" (%+.0f%%)", 100*(*a-*b) / *b)
}

// FirstN keeps the first n items of s and, when more were cut, a last "… k more" item.
func FirstN(s []string, n int) []string {
	if len(s) > n {
		return append(append([]string(nil), s[:n]...), fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}

// jsonLine turns a byte offset into a 1-based line so JSON errors can be
// reported as file:line.
func jsonLine(data []byte, off int64) int {
	if off < 0 || off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// JSONErrorLine is the 1-based line a json.Unmarshal error points at (1
// when the error carries no offset), so JSON errors read file:line.
func JSONErrorLine(data []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return jsonLine(data, se.Offset)
	case errors.As(err, &te):
		return jsonLine(data, te.Offset)
	}
	return 1
}
