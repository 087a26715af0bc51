package console

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// aslState is the part of an ASL state the graph draws.
type aslState struct {
	Type     string `json:"Type"`
	Resource string `json:"Resource"`
	Next     string `json:"Next"`
	End      bool   `json:"End"`
	Default  string `json:"Default"`
	Choices  []struct {
		Next string `json:"Next"`
	} `json:"Choices"`
	Catch []struct {
		Next string `json:"Next"`
	} `json:"Catch"`
	Branches      []aslMachine `json:"Branches"`
	Iterator      *aslMachine  `json:"Iterator"`
	ItemProcessor *aslMachine  `json:"ItemProcessor"`
}

type aslMachine struct {
	StartAt string              `json:"StartAt"`
	States  map[string]aslState `json:"States"`
}

// Node is one state of the graph, placed on the canvas.
type Node struct {
	Name, Type string
	Key        string // what ?state= names: the name, "child/name" inside a child
	Label      string // the name, shortened to fit its box
	X, Y, W, H int
	Status     string // succeeded, running, failed, caught, not-run
	Timing     string // "1.2 s", or ""
	Taken      bool   // the wave ran it
	Failure    bool   // reached only through a Catch: drawn in the failure lane
	Child      string // the child state machine the state runs, drawn below the graph
}

// Edge joins two nodes; Points is an SVG polyline.
type Edge struct {
	Points  string
	Caught  bool // a Catch
	Taken   bool // the wave went this way
	Failure bool // in, into or out of the failure lane
}

// Graph is a state machine laid out top to bottom in two lanes: the states
// reached without a Catch on the left, the failure handling on the right.
// Edges run only in the gaps between rows and the gutters between columns,
// so no line crosses a box.
type Graph struct {
	ID            string // unique on the page: its markers' ids start with it
	Selected      string // the Key of the state the panel shows
	Width, Height int
	Nodes         []Node
	Edges         []Edge // untaken first, so the taken path is drawn on top
}

// Transitions are the moves a wave made from one state to the next, as its
// history shows them: {from, to}.
type Transitions map[[2]string]bool

const (
	nodeW, nodeH = 176, 36
	gapX, gapY   = 34, 20
	laneGap      = 22 // more room between the lanes
	margin       = 20
	labelChars   = 26
)

type edgeKind int

const (
	kindNext  edgeKind = iota // Next, a Choice, a Default
	kindCatch                 // a Catch
	kindIn                    // a Map or Parallel state into a branch's start
	kindOut                   // a branch's end to its Map or Parallel state's Next
)

type edge struct {
	from, to string
	kind     edgeKind
	via      string // kindOut: the Map or Parallel state
}

// chart is a definition flattened: every state (nested ones too) in
// discovery order, and the edges between them.
type chart struct {
	start string
	order []string
	types map[string]string
	edges []edge
}

func parseChart(definition []byte) (chart, error) {
	var m aslMachine
	if err := json.Unmarshal(definition, &m); err != nil {
		return chart{}, fmt.Errorf("console: state machine definition: %w", err)
	}
	c := chart{start: m.StartAt, types: map[string]string{}}
	seen := map[string]bool{}
	c.flatten(m, seen)
	// One edge per pair and kind (a Choice may name a state twice).
	dedup := map[edge]bool{}
	var edges []edge
	for _, e := range c.edges {
		if !dedup[e] {
			dedup[e] = true
			edges = append(edges, e)
		}
	}
	c.edges = edges
	return c, nil
}

// flatten visits m depth first from its start, following Next, Choices,
// Default, then Catch; Map and Parallel states lead into each branch, and
// each branch's ends lead to the state's Next. It returns m's ends.
func (c *chart) flatten(m aslMachine, seen map[string]bool) (ends []string) {
	var visit func(name string)
	visit = func(name string) {
		st, ok := m.States[name]
		if name == "" || seen[name] || !ok {
			return
		}
		seen[name] = true
		c.order = append(c.order, name)
		c.types[name] = st.Type
		var subs []aslMachine
		subs = append(subs, st.Branches...)
		if st.Iterator != nil {
			subs = append(subs, *st.Iterator)
		}
		if st.ItemProcessor != nil {
			subs = append(subs, *st.ItemProcessor)
		}
		var subEnds []string
		for _, sub := range subs {
			c.edges = append(c.edges, edge{from: name, to: sub.StartAt, kind: kindIn})
			subEnds = append(subEnds, c.flatten(sub, seen)...)
		}
		var outs []string
		if st.Next != "" {
			if len(subs) > 0 {
				for _, e := range subEnds {
					c.edges = append(c.edges, edge{from: e, to: st.Next, kind: kindOut, via: name})
				}
			} else {
				c.edges = append(c.edges, edge{from: name, to: st.Next})
			}
			outs = append(outs, st.Next)
		}
		for _, ch := range st.Choices {
			c.edges = append(c.edges, edge{from: name, to: ch.Next})
			outs = append(outs, ch.Next)
		}
		if st.Default != "" {
			c.edges = append(c.edges, edge{from: name, to: st.Default})
			outs = append(outs, st.Default)
		}
		for _, ch := range st.Catch {
			c.edges = append(c.edges, edge{from: name, to: ch.Next, kind: kindCatch})
			outs = append(outs, ch.Next)
		}
		if st.End || st.Type == "Succeed" || st.Type == "Fail" {
			if len(subs) > 0 {
				ends = append(ends, subEnds...)
			} else {
				ends = append(ends, name)
			}
		}
		for _, o := range outs {
			visit(o)
		}
	}
	visit(m.StartAt)
	return ends
}

// follows reports whether the definition moves from one state to another
// directly (Next, Choice, Default or Catch; a Map or Parallel state to its
// Next once its branches end): how the history's transitions are
// recognised.
func (c chart) follows(from, to string) bool {
	for _, e := range c.edges {
		if e.to == to && (e.from == from && (e.kind == kindNext || e.kind == kindCatch) || e.kind == kindOut && e.via == from) {
			return true
		}
	}
	return false
}

// Layout draws definition (ASL JSON) with each state's status and timing
// and the path taken. Each lane is layered by the longest path from its
// first states, ignoring the edges that close a loop; a state takes the
// column of the state before it when it can, so the main path runs
// straight down.
func Layout(definition []byte, states map[string]StateRun, taken Transitions) (Graph, error) {
	c, err := parseChart(definition)
	if err != nil {
		return Graph{}, err
	}
	return c.layout("", states, taken), nil
}

// layout places c's states; prefix is prepended to each node's Key.
func (c chart) layout(prefix string, states map[string]StateRun, taken Transitions) Graph {
	n := len(c.order)
	index := make(map[string]int, n)
	for i, name := range c.order {
		index[name] = i
	}
	// The main lane: what the start reaches without a Catch.
	mainLane := make([]bool, n)
	var reach func(i int)
	reach = func(i int) {
		if mainLane[i] {
			return
		}
		mainLane[i] = true
		for _, e := range c.edges {
			if t, ok := index[e.to]; ok && e.from == c.order[i] && e.kind != kindCatch {
				reach(t)
			}
		}
	}
	if i, ok := index[c.start]; ok {
		reach(i)
	}
	back := c.backEdges(index, mainLane)
	// Longest-path layers within each lane.
	layer := make([]int, n)
	for changed, guard := true, 0; changed && guard <= n; guard++ {
		changed = false
		for k, e := range c.edges {
			f, okf := index[e.from]
			t, okt := index[e.to]
			if !okf || !okt || back[k] || mainLane[f] != mainLane[t] {
				continue
			}
			if layer[t] < layer[f]+1 {
				layer[t], changed = layer[f]+1, true
			}
		}
	}
	// Columns, in discovery order: the column of the first placed
	// predecessor in the lane, reserving the cells a straight drop from it
	// passes through; else the next free one.
	col := make([]int, n)
	placed := make([]bool, n)
	used := map[[3]int]bool{} // lane, row, column
	laneCols := [2]int{1, 0}
	lane := func(i int) int {
		if mainLane[i] {
			return 0
		}
		return 1
	}
	for i := range c.order {
		want, from := 0, -1
		for k, e := range c.edges {
			if f, ok := index[e.from]; ok && e.to == c.order[i] && placed[f] && !back[k] && lane(f) == lane(i) {
				want, from = col[f], f
				break
			}
		}
		x := want
		for used[[3]int{lane(i), layer[i], x}] {
			x++
		}
		col[i], placed[i] = x, true
		used[[3]int{lane(i), layer[i], x}] = true
		if from >= 0 && x == col[from] {
			for r := layer[from] + 1; r < layer[i]; r++ {
				used[[3]int{lane(i), r, x}] = true
			}
		}
		laneCols[lane(i)] = max(laneCols[lane(i)], x+1)
	}
	g := grid{mainCols: laneCols[0], cols: laneCols[0] + laneCols[1], cells: map[[2]int]bool{}}
	rows := 1
	for i := range c.order {
		if lane(i) == 1 {
			col[i] += laneCols[0]
		}
		g.cells[[2]int{layer[i], col[i]}] = true
		rows = max(rows, layer[i]+1)
	}
	out := Graph{Width: g.colX(g.cols-1) + nodeW + margin, Height: rowY(rows-1) + nodeH + gapY}
	for i, name := range c.order {
		run, ok := states[name]
		status, timing := "not-run", ""
		if ok {
			status, timing = run.Status, run.Timing()
		}
		label := name
		if utf8.RuneCountInString(label) > labelChars {
			label = string([]rune(label)[:labelChars-1]) + "…"
		}
		out.Nodes = append(out.Nodes, Node{Name: name, Type: c.types[name], Key: prefix + name, Label: label,
			X: g.colX(col[i]), Y: rowY(layer[i]), W: nodeW, H: nodeH, Status: status, Timing: timing,
			Taken: ok, Failure: !mainLane[i]})
	}
	ran := func(name string) bool { _, ok := states[name]; return ok }
	var strong []Edge
	for _, e := range c.edges {
		f, okf := index[e.from]
		t, okt := index[e.to]
		if !okf || !okt {
			continue
		}
		var took bool
		switch e.kind {
		case kindIn:
			took = ran(e.from) && ran(e.to)
		case kindOut:
			took = ran(e.from) && taken[[2]string{e.via, e.to}]
		default:
			took = taken[[2]string{e.from, e.to}]
		}
		var dxOut, dxIn, dy, dg int
		switch {
		case e.kind == kindCatch:
			dxOut, dy, dg = nodeW/2-14, 5, -3
		case !mainLane[f] && mainLane[t]: // from the failure lane back into the main one
			dxIn, dy, dg = nodeW/2-14, -5, 3
		}
		gutter := -1
		if mainLane[f] != mainLane[t] {
			gutter = g.mainCols
		}
		pts := g.route([2]int{layer[f], col[f]}, [2]int{layer[t], col[t]}, gutter, dxOut, dxIn, dy, dg)
		ed := Edge{Points: strings.Join(pts, " "), Caught: e.kind == kindCatch, Taken: took, Failure: !mainLane[f] || !mainLane[t]}
		if took {
			strong = append(strong, ed)
		} else {
			out.Edges = append(out.Edges, ed)
		}
	}
	out.Edges = append(out.Edges, strong...)
	return out
}

// backEdges marks the edges that close a loop within a lane: those reaching
// a state still being visited in a depth-first walk along the lane's edges.
func (c chart) backEdges(index map[string]int, mainLane []bool) map[int]bool {
	back := map[int]bool{}
	state := make([]int, len(c.order)) // 0 new, 1 on the walk, 2 done
	var walk func(i int)
	walk = func(i int) {
		state[i] = 1
		for k, e := range c.edges {
			if e.from != c.order[i] {
				continue
			}
			t, ok := index[e.to]
			switch {
			case !ok || mainLane[t] != mainLane[i]:
			case state[t] == 1:
				back[k] = true
			case state[t] == 0:
				walk(t)
			}
		}
		state[i] = 2
	}
	for i := range c.order {
		if state[i] == 0 {
			walk(i)
		}
	}
	return back
}

// grid is the canvas's rows and columns: the main lane's columns, then the
// failure lane's.
type grid struct {
	mainCols, cols int
	cells          map[[2]int]bool // row, column: a box is there
}

func rowY(r int) int { return margin + r*(nodeH+gapY) }

// gapMid is the middle of the gap above row r.
func gapMid(r int) int { return rowY(r) - gapY/2 }

func (g grid) colX(c int) int {
	x := margin + c*(nodeW+gapX)
	if c >= g.mainCols {
		x += laneGap
	}
	return x
}

// gutterX is the middle of the gutter left of column c (c == cols: right
// of the last column).
func (g grid) gutterX(c int) int {
	switch {
	case c <= 0:
		return g.colX(0) - gapX/2
	case c >= g.cols:
		return g.colX(g.cols-1) + nodeW + gapX/2
	}
	return (g.colX(c-1) + nodeW + g.colX(c)) / 2
}

// route draws an edge from the bottom of cell f to the top of cell t:
// straight down when nothing is in the way, else along the gap below f, a
// gutter (the one next to f towards t when gutter < 0) and the gap above
// t. dxOut and dxIn move the ends from the boxes'
// middles, dy the runs along gaps, dg the run along the gutter.
func (g grid) route(f, t [2]int, gutter, dxOut, dxIn, dy, dg int) []string {
	x1, y1 := g.colX(f[1])+nodeW/2+dxOut, rowY(f[0])+nodeH
	x2, y2 := g.colX(t[1])+nodeW/2+dxIn, rowY(t[0])
	if t[0] == f[0]+1 {
		if x1 == x2 {
			return []string{pt(x1, y1), pt(x2, y2)}
		}
		return []string{pt(x1, y1), pt(x1, gapMid(t[0])+dy), pt(x2, gapMid(t[0])+dy), pt(x2, y2)}
	}
	if t[0] > f[0] && t[1] == f[1] && x1 == x2 {
		clear := true
		for r := f[0] + 1; r < t[0]; r++ {
			clear = clear && !g.cells[[2]int{r, f[1]}]
		}
		if clear {
			return []string{pt(x1, y1), pt(x2, y2)}
		}
	}
	if gutter < 0 {
		gutter = f[1] + 1
		if t[1] < f[1] {
			gutter = f[1]
		}
	}
	gx := g.gutterX(gutter) + dg
	below, above := gapMid(f[0]+1)+dy, gapMid(t[0])+dy
	return []string{pt(x1, y1), pt(x1, below), pt(gx, below), pt(gx, above), pt(x2, above), pt(x2, y2)}
}

func pt(x, y int) string { return fmt.Sprintf("%d,%d", x, y) }
