package checker

import "strings"

// dropUnobserved is the pruning pass run on every partition before the
// search (the rule and its proof are in the package doc, "Pruning"). It
// removes a timed-out write, add, enqueue or append whose value no
// completed read-like op of the partition returned, where that is sound:
//
//   - write: when the key has no cas, or when every cas of the key
//     returned true and none expects the write's value;
//   - add (set), enqueue (queue): always;
//   - append (log): when no append of the key returned its offset (an
//     offset counts the appends before it, observed or not);
//   - never inc (a counter read shows every increment without its value).
//
// Why the removal pays: porcupine may try an open-ended op at every point
// after its invoke, so each such op can double the states it explores.
func dropUnobserved(p *partition) {
	pending := false
	for _, o := range p.ops {
		if !o.Output.(*linOut).known {
			pending = true
			break
		}
	}
	if !pending {
		return
	}
	seen := map[string]bool{}
	casExpects := map[string]bool{}
	hasCAS, casNotOK, hasOffset := false, false, false
	for _, o := range p.ops {
		in, out := *o.Input.(*linIn), *o.Output.(*linOut)
		switch {
		case in.verb == vCAS:
			hasCAS = true
			casExpects[in.a] = true
			if !out.known || !out.ok {
				casNotOK = true
			}
		case in.verb == vAppend && out.known && out.n >= 0:
			hasOffset = true
		case (in.verb == vRead || in.verb == vDequeue) && out.known:
			for _, e := range strings.Split(strings.TrimSuffix(out.s, sep), sep) {
				seen[e] = true
			}
		}
	}
	keep := 0
	for i, o := range p.ops {
		in, out := *o.Input.(*linIn), *o.Output.(*linOut)
		drop := false
		if !out.known && !seen[in.a] {
			switch in.verb {
			case vWrite:
				drop = !hasCAS || !casNotOK && !casExpects[in.a]
			case vAdd, vEnqueue:
				drop = true
			case vAppend:
				drop = !hasOffset
			}
		}
		if !drop {
			p.ops[keep], p.idx[keep] = o, p.idx[i]
			keep++
		}
	}
	p.ops, p.idx = p.ops[:keep], p.idx[:keep]
}
