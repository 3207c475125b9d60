package checker

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"strings"
)

// graph is the dependency graph in compressed form: the out-edges of node
// n are dst[off[n]:off[n+1]], each with its type bits and one key.
type graph struct {
	off  []int32
	dst  []int32
	mask []uint8
	key  []int32
}

// build merges parallel edges (their type bits OR-ed; the key of the
// first of them with one) into a graph. The edges go straight into their
// source's range with a counting sort (no sort of every edge, no copy of
// them all), then each range is put in target order and merged in place.
func (s *iso) build() *graph {
	n := len(s.txns)
	g := &graph{off: make([]int32, n+1)}
	total := 0
	for _, b := range s.edges {
		total += len(b)
		for _, e := range b {
			g.off[e.from+1]++
		}
	}
	for v := 1; v <= n; v++ {
		g.off[v] += g.off[v-1]
	}
	type half struct {
		to   int32
		key  int32
		mask uint8
	}
	hs := make([]half, total)
	next := slices.Clone(g.off[:n])
	for bi, b := range s.edges {
		for _, e := range b {
			hs[next[e.from]] = half{e.to, e.key, e.mask}
			next[e.from]++
		}
		s.edges[bi] = nil
	}
	s.nEdges, s.edges = total, nil // the graph holds them now
	g.dst, g.mask, g.key = make([]int32, 0, total), make([]uint8, 0, total), make([]int32, 0, total)
	var w int32
	for v := 0; v < n; v++ {
		r := hs[g.off[v]:g.off[v+1]]
		g.off[v] = w
		// Stable: among parallel edges the first keeps its place.
		slices.SortStableFunc(r, func(a, b half) int { return cmp.Compare(a.to, b.to) })
		for i := 0; i < len(r); {
			j := i
			var m uint8
			key := int32(-1)
			for ; j < len(r) && r[j].to == r[i].to; j++ {
				if key < 0 {
					key = r[j].key
				}
				m |= r[j].mask
			}
			g.dst = append(g.dst, r[i].to)
			g.mask = append(g.mask, m)
			g.key = append(g.key, key)
			w++
			i = j
		}
	}
	g.off[n] = w
	return g
}

// sccState is Tarjan's per-node state, allocated once per graph and
// reset only where the previous call touched it, so searching thousands
// of small components does not cost thousands of full-size arrays.
type sccState struct {
	index, low, comp []int32
	onStack          []bool
	touched          []int32
}

func newSCCState(n int) *sccState {
	st := &sccState{index: make([]int32, n), low: make([]int32, n), comp: make([]int32, n), onStack: make([]bool, n)}
	for i := range st.index {
		st.index[i], st.comp[i] = -1, -1
	}
	return st
}

// sccs computes the strongly connected components (Tarjan, iterative:
// histories reach millions of transactions, far past the stack a
// recursion would need) over the edges with a type in allow, from the
// roots given (nil: every node), not leaving in (nil: no limit). It
// returns each node's component in st.comp (valid until the next call on
// st) and the components with more than one node.
func (s *iso) sccs(g *graph, st *sccState, allow uint8, roots []int32, in func(int32) bool) (comp []int32, multi [][]int32) {
	for _, v := range st.touched {
		st.index[v], st.comp[v], st.onStack[v] = -1, -1, false
	}
	st.touched = st.touched[:0]
	index, low, onStack := st.index, st.low, st.onStack
	comp = st.comp
	var stack []int32
	type frame struct{ v, e int32 }
	var call []frame
	next := int32(0)
	nc := int32(0)
	n := int32(len(g.off) - 1)
	for ri := int32(0); ; ri++ {
		var root int32
		if roots == nil {
			if ri >= n {
				break
			}
			root = ri
		} else {
			if int(ri) >= len(roots) {
				break
			}
			root = roots[ri]
		}
		if index[root] >= 0 {
			continue
		}
		call = append(call[:0], frame{root, g.off[root]})
		index[root], low[root] = next, next
		next++
		st.touched = append(st.touched, root)
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			if s.b.spent() {
				return comp, multi
			}
			f := &call[len(call)-1]
			v := f.v
			if f.e < g.off[v+1] {
				e := f.e
				f.e++
				w := g.dst[e]
				if g.mask[e]&allow == 0 || (in != nil && !in(w)) {
					continue
				}
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					st.touched = append(st.touched, w)
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, g.off[w]})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				var members []int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = nc
					members = append(members, w)
					if w == v {
						break
					}
				}
				if len(members) > 1 {
					multi = append(multi, members)
				}
				nc++
			}
		}
	}
	return comp, multi
}

// path returns the shortest path from a to b (BFS) over edges with a type
// in allow inside component c, or nil. a == b finds the shortest cycle
// through a.
func (s *iso) path(g *graph, comp []int32, c int32, a, b int32, allow uint8, prev map[int32]int32) []step {
	clear(prev)
	queue := []int32{a}
	found := false
	for qi := 0; qi < len(queue) && !found; qi++ {
		if s.b.spent() {
			return nil
		}
		v := queue[qi]
		for e := g.off[v]; e < g.off[v+1]; e++ {
			w := g.dst[e]
			if g.mask[e]&allow == 0 || comp[w] != c {
				continue
			}
			if _, seen := prev[w]; seen {
				continue
			}
			prev[w] = e
			if w == b {
				found = true
				break
			}
			queue = append(queue, w)
		}
	}
	if !found {
		return nil
	}
	var steps []step
	for w := b; ; {
		e := prev[w]
		from := s.edgeFrom(g, e)
		steps = append(steps, step{from, w, g.mask[e] & allow, g.key[e]})
		w = from
		if w == a || len(steps) > len(g.dst) {
			break
		}
	}
	slices.Reverse(steps)
	return steps
}

// edgeFrom finds the source node of edge e (binary search on off).
func (s *iso) edgeFrom(g *graph, e int32) int32 {
	lo, hi := 0, len(g.off)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if g.off[mid] <= e {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return int32(lo)
}

// classify names a cycle by its edges. An edge with several types counts
// as its weakest-needed one: ww before wr before rw, so a cycle is given
// the strongest class its edges allow.
func classify(steps []step) string {
	rw, wr, rt, proc := 0, 0, false, false
	for _, st := range steps {
		switch {
		case st.mask&edgeWW != 0:
		case st.mask&edgeWR != 0:
			wr++
		case st.mask&edgeRW != 0:
			rw++
		case st.mask&edgeRT != 0:
			rt = true
		default:
			proc = true
		}
	}
	c := classG0
	switch {
	case rw >= 2 && !adjacentRW(steps):
		c = classGNonadj
	case rw >= 2:
		c = classG2Item
	case rw == 1:
		c = classGSingle
	case wr > 0:
		c = classG1c
	}
	switch {
	case rt:
		c += suffixRealtime
	case proc:
		c += suffixProcess
	}
	return c
}

// adjacentRW reports whether two rw edges follow each other somewhere in
// the cycle (the last step is followed by the first). Snapshot isolation
// allows such cycles (write skew) but not those whose rw edges are all
// separated by other edges (Elle's G-nonadjacent).
func adjacentRW(steps []step) bool {
	isRW := func(st step) bool { return st.mask&(edgeWW|edgeWR) == 0 && st.mask&edgeRW != 0 }
	for i, st := range steps {
		if isRW(st) && isRW(steps[(i+1)%len(steps)]) {
			return true
		}
	}
	return false
}

// findCycles searches each strongly connected component for cycles of each
// class, weakest (G0) first, and reports one shortest cycle per class.
func (s *iso) findCycles() {
	if s.b.spent() {
		return
	}
	g := s.build()
	all := edgeData
	if s.level == StrictSerializable {
		all |= edgeRT
	}
	if sessionBase(s.level) != "" {
		all |= edgeProc
	}
	n := len(s.txns)
	comp, multi := s.sccs(g, newSCCState(n), all, nil, nil)
	comp = slices.Clone(comp)
	scratch := newSCCState(n)
	prev := map[int32]int32{}
	for _, members := range multi {
		if s.b.spent() {
			return
		}
		c := comp[members[0]]
		found := map[string]bool{}
		try := func(steps []step) {
			if steps == nil {
				return
			}
			cl := classify(steps)
			if found[cl] || len(found) >= maxCycleClasses {
				return
			}
			found[cl] = true
			s.reportCycle(cl, steps)
		}
		inC := func(v int32) bool { return comp[v] == c }
		// G0 and G1c: cycles over ww, then ww+wr, inside sub-components.
		for _, allow := range []uint8{edgeWW, edgeWW | edgeWR} {
			sub, subs := s.sccs(g, scratch, allow, members, inC)
			for _, sm := range subs {
				try(s.path(g, sub, sub[sm[0]], sm[0], sm[0], allow, prev))
			}
		}
		// G-single: one rw edge a→b closed by a ww/wr path b→a.
		tried := 0
		for _, a := range members {
			for e := g.off[a]; e < g.off[a+1] && tried < maxRWStarts && !found[classGSingle]; e++ {
				b := g.dst[e]
				if g.mask[e]&edgeRW == 0 || comp[b] != c {
					continue
				}
				tried++
				back := s.path(g, comp, c, b, a, edgeWW|edgeWR, prev)
				if back != nil {
					try(append([]step{{a, b, edgeRW, g.key[e]}}, back...))
				}
			}
		}
		// Any data cycle (G2-item), then with real-time or process order.
		for _, allow := range []uint8{edgeData, all} {
			if allow == edgeData || all != edgeData {
				sub, subs := s.sccs(g, scratch, allow, members, inC)
				for _, sm := range subs {
					try(s.path(g, sub, sub[sm[0]], sm[0], sm[0], allow, prev))
				}
			}
		}
	}
}

func (s *iso) reportCycle(class string, steps []step) {
	var b strings.Builder
	ids := make([]int32, 0, len(steps))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	key := ""
	for i, st := range steps {
		if i == 0 {
			b.WriteString(s.describe(st.from))
		}
		k := ""
		if st.key >= 0 {
			k = "[" + s.keys[st.key] + "]"
			if key == "" {
				key = s.keys[st.key]
			}
		}
		fmt.Fprintf(&b, " -%s%s-> %s", edgeName(st.mask), k, s.describe(st.to))
		ids = append(ids, st.from)
		tx := &s.txns[st.from]
		lo, hi = min(lo, tx.inv), max(hi, tx.end)
	}
	if hi == math.MaxInt64 {
		hi = 0
	}
	if forbidden(s.level, class) && len(s.cycles) < maxPictureCycles {
		s.cycles = append(s.cycles, cycle{class, steps})
	}
	s.report(class, Anomaly{Key: key, OpIDs: s.opIDs(ids...), WindowStart: lo, WindowEnd: hi,
		Message: fmt.Sprintf("cycle of %d transactions: %s", len(steps), b.String())})
}

// writePicture writes an HTML page with one SVG drawing per cycle (nodes
// on a circle, edges labelled with type and key). It stops before the
// page would pass maxBytes (0: DefaultHTMLMaxBytes) and reports whether
// cycles were left out.
func (s *iso) writePicture(path string, maxBytes int64) (bool, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultHTMLMaxBytes
	}
	var b strings.Builder
	b.WriteString("<!doctype html><meta charset=utf-8><title>isolation anomalies</title><style>body{font-family:sans-serif}svg{border:1px solid #ccc;margin:8px}</style>\n")
	fmt.Fprintf(&b, "<h1>Isolation anomalies at %s</h1>\n", html.EscapeString(s.level))
	capped := false
	for _, c := range s.cycles {
		var one strings.Builder
		n := len(c.steps)
		const size, r = 360.0, 130.0
		pos := func(i int) (float64, float64) {
			a := 2*math.Pi*float64(i)/float64(n) - math.Pi/2
			return size/2 + r*math.Cos(a), size/2 + r*math.Sin(a)
		}
		fmt.Fprintf(&one, "<h2>%s</h2>\n<svg width=%d height=%d viewBox=\"0 0 %d %d\"><defs><marker id=a viewBox=\"0 0 10 10\" refX=10 refY=5 markerWidth=6 markerHeight=6 orient=auto><path d=\"M0 0L10 5L0 10z\"/></marker></defs>\n",
			html.EscapeString(c.class), int(size), int(size), int(size), int(size))
		for i, st := range c.steps {
			x1, y1 := pos(i)
			x2, y2 := pos((i + 1) % n)
			label := edgeName(st.mask)
			if st.key >= 0 {
				label += " " + s.keys[st.key]
			}
			fmt.Fprintf(&one, "<line x1=%.0f y1=%.0f x2=%.0f y2=%.0f stroke=black marker-end=\"url(#a)\"/><text x=%.0f y=%.0f font-size=12 fill=#a00>%s</text>\n",
				x1, y1, x2+(x1-x2)*0.15, y2+(y1-y2)*0.15, (x1+x2)/2, (y1+y2)/2, html.EscapeString(label))
			fmt.Fprintf(&one, "<circle cx=%.0f cy=%.0f r=18 fill=#def stroke=#346/><text x=%.0f y=%.0f font-size=11 text-anchor=middle>T%s</text>\n",
				x1, y1, x1, y1+4, html.EscapeString(s.txns[st.from].id))
		}
		one.WriteString("</svg>\n")
		if int64(b.Len()+one.Len()) > maxBytes {
			capped = true
			break
		}
		b.WriteString(one.String())
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return false, fmt.Errorf("write isolation picture: %w", err)
	}
	return capped, nil
}
