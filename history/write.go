package history

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends op as one JSON object (no newline) with every column
// present, empty nullable columns as null.
func AppendJSON(b []byte, op *Op) []byte {
	b = append(b, `{"op_id":`...)
	b = appendStr(b, op.OpID)
	b = append(b, `,"process_id":`...)
	b = appendStr(b, op.ProcessID)
	b = append(b, `,"invoke_ts":`...)
	b = strconv.AppendInt(b, op.InvokeTS, 10)
	b = append(b, `,"complete_ts":`...)
	if op.CompleteTS == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *op.CompleteTS, 10)
	}
	b = append(b, `,"op_type":`...)
	b = appendStr(b, op.OpType)
	b = append(b, `,"key":`...)
	b = appendOptStr(b, op.Key)
	b = append(b, `,"input":`...)
	b = appendRaw(b, op.Input)
	b = append(b, `,"output":`...)
	b = appendRaw(b, op.Output)
	b = append(b, `,"error":`...)
	b = appendOptStr(b, op.Error)
	b = append(b, `,"timeout_marker":`...)
	b = strconv.AppendBool(b, op.TimeoutMarker)
	b = append(b, `,"node_seen":`...)
	b = appendOptStr(b, op.NodeSeen)
	b = append(b, `,"fault_epoch":`...)
	b = appendOptStr(b, op.FaultEpoch)
	return append(b, '}')
}

func appendRaw(b []byte, r json.RawMessage) []byte {
	if len(r) == 0 {
		return append(b, "null"...)
	}
	return append(b, r...)
}

func appendOptStr(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendStr(b, s)
}

func appendStr(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		q, _ := json.Marshal(s) // replaces invalid bytes; cannot fail for a string
		return append(b, q...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// AppendMeta appends the {"_meta":{...}} header line (no newline), filling
// Schema when empty.
func AppendMeta(b []byte, m Meta) []byte {
	if m.Schema == "" {
		m.Schema = Schema
	}
	j, _ := json.Marshal(struct {
		Meta Meta `json:"_meta"`
	}{m}) // plain struct of strings, ints and a bool: cannot fail
	return append(b, j...)
}
