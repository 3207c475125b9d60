package plan

import (
	"strconv"
	"strings"
)

// maxRange bounds "C1–C999999" expansion so a typo cannot allocate millions
// of ids.
const maxRange = 200

func isWordByte(b byte) bool {
	return b == '_' || isDigit(b) || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func isArmByte(b byte) bool { return isWordByte(b) || b == '-' }

// ids returns the ids with the given prefix ('C', 'M', 'H', 'S') in order of
// first appearance. Ranges written "C1–C3", "C1-C3" or "C1..C3" are
// expanded. With arms, scenario ids may carry an arm ("S4/api").
func ids(s string, prefix byte, arms bool) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for i := 0; i < len(s); i++ {
		id, num, end, ok := idAt(s, i, prefix, arms)
		if !ok {
			continue
		}
		add(id)
		i = end - 1
		if strings.Contains(id, "/") {
			continue
		}
		// A range: "C1–C3".
		j, ok := skipRangeDash(s, end)
		if !ok {
			continue
		}
		id2, num2, end2, ok2 := idAt(s, j, prefix, false)
		if !ok2 || strings.Contains(id2, "/") || num2 <= num || num2-num > maxRange {
			continue
		}
		for k := num + 1; k <= num2; k++ {
			add(string(prefix) + strconv.Itoa(k))
		}
		i = end2 - 1
	}
	return out
}

// skipRangeDash returns the index just past a range separator ("–", "—",
// "..", "-", spaces allowed around it) that starts at s[j], or false when
// there is none.
func skipRangeDash(s string, j int) (int, bool) {
	for j < len(s) && s[j] == ' ' {
		j++
	}
	switch {
	case strings.HasPrefix(s[j:], "–"), strings.HasPrefix(s[j:], "—"):
		j += len("–")
	case strings.HasPrefix(s[j:], ".."):
		j += 2
	case strings.HasPrefix(s[j:], "-"):
		j++
	default:
		return j, false
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	return j, true
}

// idAt parses an id starting exactly at s[i].
func idAt(s string, i int, prefix byte, arms bool) (id string, num, end int, ok bool) {
	if i >= len(s) || s[i] != prefix || (i > 0 && isWordByte(s[i-1])) {
		return "", 0, 0, false
	}
	j := i + 1
	for j < len(s) && isDigit(s[j]) && j-i <= 9 {
		j++
	}
	if j == i+1 || (j < len(s) && isDigit(s[j])) {
		return "", 0, 0, false
	}
	num, _ = strconv.Atoi(s[i+1 : j])
	if arms && j+1 < len(s) && s[j] == '/' && isWordByte(s[j+1]) {
		k := j + 1
		for k < len(s) && isArmByte(s[k]) {
			k++
		}
		arm := strings.TrimRight(s[j+1:k], "-")
		return s[i:j] + "/" + arm, num, j + 1 + len(arm), true
	}
	if j < len(s) && (isWordByte(s[j])) {
		return "", 0, 0, false
	}
	return s[i:j], num, j, true
}

// isID reports whether s is exactly one id with the prefix (no arm).
func isID(s string, prefix byte) bool {
	id, _, end, ok := idAt(s, 0, prefix, false)
	return ok && end == len(s) && id == s
}

// scenarioOf returns the scenario part of an arm id ("S4/api" → "S4").
func scenarioOf(id string) string {
	if i := strings.IndexByte(id, '/'); i >= 0 {
		return id[:i]
	}
	return id
}
