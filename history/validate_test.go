package history

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// firstIndexMap is the obvious implementation firstIndex must agree with.
func firstIndexMap(ops []Op) []int {
	seen := map[string]int{}
	out := make([]int, len(ops))
	for i, op := range ops {
		if j, ok := seen[op.OpID]; ok {
			out[i] = j
		} else {
			seen[op.OpID], out[i] = i, i
		}
	}
	return out
}

func opsWithIDs(ids ...string) []Op {
	ops := make([]Op, len(ids))
	for i, id := range ids {
		ops[i].OpID = id
	}
	return ops
}

func TestFirstIndex(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		want []int
	}{
		{"distinct dense", []string{"1", "2", "3"}, []int{0, 1, 2}},
		{"numeric repeat", []string{"1", "2", "1", "2", "1"}, []int{0, 1, 0, 1, 0}},
		// Leading zeros, signs and spaces are different ids as strings even
		// where they name the same number.
		{"leading zero is another id", []string{"7", "07", "007", "07"}, []int{0, 1, 2, 1}},
		{"zero", []string{"0", "00", "0"}, []int{0, 1, 0}},
		{"sign and space", []string{"5", "+5", " 5", "5 ", "+5"}, []int{0, 1, 2, 3, 1}},
		{"beyond table range", []string{"1", "99999999999", "99999999999", "1"}, []int{0, 1, 1, 0}},
		{"too many digits", []string{"1234567890123456789012", "1234567890123456789012"}, []int{0, 0}},
		{"non numeric", []string{"a", "b", "a", "", ""}, []int{0, 1, 0, 3, 3}},
		{"mixed", []string{"3", "c3", "3", "c3", "4"}, []int{0, 1, 0, 1, 4}},
		{"large id grows table", []string{"1", "30", "2", "30", "1"}, []int{0, 1, 2, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstIndex(opsWithIDs(tt.ids...))
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Fatalf("firstIndex(%q) = %v, want %v", tt.ids, got, tt.want)
				}
			}
		})
	}
}

// TestFirstIndexMatchesMap compares firstIndex with a plain map on random
// id mixes: small and large numbers, zero-padded and non-numeric spellings.
func TestFirstIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for round := 0; round < 200; round++ {
		n := 1 + rng.IntN(300)
		ids := make([]string, n)
		for i := range ids {
			v := rng.IntN(2 * n)
			switch rng.IntN(6) {
			case 0:
				ids[i] = "0" + strconv.Itoa(v)
			case 1:
				ids[i] = "op" + strconv.Itoa(v)
			case 2:
				ids[i] = strconv.Itoa(v * 1000)
			default:
				ids[i] = strconv.Itoa(v)
			}
		}
		ops := opsWithIDs(ids...)
		got, want := firstIndex(ops), firstIndexMap(ops)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d: op %d (%q): first %d, want %d", round, i, ids[i], got[i], want[i])
			}
		}
	}
}

// BenchmarkValidate compares Validate (table for numeric ids) with the same
// history validated through a string map only (ids not canonical decimals).
func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		ops := make([]Op, n)
		c := int64(1)
		for i := range ops {
			ops[i] = Op{OpID: strconv.Itoa(i + 1), InvokeTS: 0, CompleteTS: &c, OpType: "write"}
		}
		b.Run("numeric/"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				if errs := Validate("h", ops, nil); len(errs) != 0 {
					b.Fatal(errs[0])
				}
			}
		})
		str := make([]Op, n)
		for i := range str {
			str[i] = ops[i]
			str[i].OpID = "op-" + ops[i].OpID
		}
		b.Run("map/"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				if errs := Validate("h", str, nil); len(errs) != 0 {
					b.Fatal(errs[0])
				}
			}
		})
	}
}

// FuzzFirstIndex checks the numeric-id table against a plain map on
// arbitrary comma-separated id lists.
func FuzzFirstIndex(f *testing.F) {
	f.Add("1,2,1,01,0,00,0")
	f.Add("99999999999999999999,99999999999999999999,a,,")
	f.Add("+1,1, 1,1")
	f.Fuzz(func(t *testing.T, list string) {
		ops := opsWithIDs(strings.Split(list, ",")...)
		got, want := firstIndex(ops), firstIndexMap(ops)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("op %d (%q): first %d, want %d", i, ops[i].OpID, got[i], want[i])
			}
		}
	})
}

// TestValidatorInStretches: validating a history in stretches of any size
// gives Validate's errors for the whole, repeats across stretches
// included.
func TestValidatorInStretches(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	c := func(v int64) *int64 { return &v }
	for round := 0; round < 50; round++ {
		n := 1 + rng.IntN(400)
		ops := make([]Op, n)
		for i := range ops {
			op := Op{OpID: strconv.Itoa(1 + rng.IntN(n)), ProcessID: "p", InvokeTS: 10, CompleteTS: c(20), OpType: "read", Output: []byte(strconv.Itoa(rng.IntN(3))), Line: i + 1}
			switch rng.IntN(8) {
			case 0:
				op.CompleteTS = nil
			case 1:
				op.CompleteTS = c(5)
			case 2:
				op.OpID = "x" + op.OpID
			case 3:
				op.OpType, op.Input, op.Output = OpTxn, []byte(`[["r","k",null]]`), []byte(`[["r","k",1]]`)
			case 4:
				op.OpType, op.Input = OpTxn, []byte(`[["q","k",null]]`)
			case 5:
				op.FaultEpoch = "w" + strconv.Itoa(rng.IntN(3))
			}
			ops[i] = op
		}
		sched := []string{"w0", "w1"}
		want := fmt.Sprint(Validate("h", ops, sched))
		v := NewValidator("h", sched)
		var got []error
		for lo := 0; lo < n; {
			hi := min(n, lo+1+rng.IntN(50))
			got = append(got, v.Check(ops[lo:hi], nil)...)
			lo = hi
		}
		if fmt.Sprint(got) != want {
			t.Fatalf("round %d: in stretches %v\nwhole %v", round, got, want)
		}
		if round == 0 && !strings.Contains(want, "repeats line") {
			t.Fatalf("no repeated op_id in the history: %v", want)
		}
	}
}
