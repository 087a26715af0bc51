package console

import (
	"encoding/json"
	"fmt"
	"strings"
)

// aslState is the part of an ASL state the graph draws.
type aslState struct {
	Type    string `json:"Type"`
	Next    string `json:"Next"`
	End     bool   `json:"End"`
	Default string `json:"Default"`
	Choices []struct {
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
	X, Y, W, H int
	Status     string // succeeded, running, failed, caught, not-run
	Timing     string // "1.2 s", or ""
}

// Edge joins two nodes; Points is an SVG polyline.
type Edge struct {
	Points string
	Caught bool
}

// Graph is a state machine laid out top to bottom, one row per layer.
type Graph struct {
	Width, Height int
	Nodes         []Node
	Edges         []Edge
}

const (
	nodeW, nodeH = 190, 44
	gapX, gapY   = 24, 40
	margin       = 12
)

type edge struct {
	from, to string
	caught   bool
}

// flatten lists every state (nested ones too) in discovery order and the
// edges between them: Next, Choices, Default, Catch, and for Parallel and Map
// states an edge into each branch and from each branch's ends to Next.
func flatten(m aslMachine, order *[]string, types map[string]string, edges *[]edge) (ends []string) {
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if name == "" || seen[name] {
			return
		}
		st, ok := m.States[name]
		if !ok {
			return
		}
		seen[name] = true
		*order = append(*order, name)
		types[name] = st.Type
		var outs []string
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
			*edges = append(*edges, edge{from: name, to: sub.StartAt})
			subEnds = append(subEnds, flatten(sub, order, types, edges)...)
		}
		if st.Next != "" {
			if len(subs) > 0 {
				for _, e := range subEnds {
					*edges = append(*edges, edge{from: e, to: st.Next})
				}
			} else {
				*edges = append(*edges, edge{from: name, to: st.Next})
			}
			outs = append(outs, st.Next)
		}
		for _, c := range st.Choices {
			*edges = append(*edges, edge{from: name, to: c.Next})
			outs = append(outs, c.Next)
		}
		if st.Default != "" {
			*edges = append(*edges, edge{from: name, to: st.Default})
			outs = append(outs, st.Default)
		}
		for _, c := range st.Catch {
			*edges = append(*edges, edge{from: name, to: c.Next, caught: true})
			outs = append(outs, c.Next)
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

// Layout draws definition (ASL JSON) with each state's status and timing.
// Layers are the longest path from the start, ignoring edges that go back.
func Layout(definition []byte, states map[string]StateRun) (Graph, error) {
	var m aslMachine
	if err := json.Unmarshal(definition, &m); err != nil {
		return Graph{}, fmt.Errorf("console: state machine definition: %w", err)
	}
	var order []string
	types := map[string]string{}
	var edges []edge
	flatten(m, &order, types, &edges)
	index := map[string]int{}
	for i, n := range order {
		index[n] = i
	}
	// Longest-path layering over forward edges (discovery order is a
	// topological order once back edges are dropped).
	layer := make([]int, len(order))
	for changed, guard := true, 0; changed && guard < len(order)+1; guard++ {
		changed = false
		for _, e := range edges {
			f, okf := index[e.from]
			t, okt := index[e.to]
			if !okf || !okt || t <= f {
				continue
			}
			if layer[t] < layer[f]+1 {
				layer[t] = layer[f] + 1
				changed = true
			}
		}
	}
	rows := map[int][]int{}
	maxRow, maxCols := 0, 1
	for i := range order {
		rows[layer[i]] = append(rows[layer[i]], i)
		maxRow = max(maxRow, layer[i])
		maxCols = max(maxCols, len(rows[layer[i]]))
	}
	g := Graph{
		Width:  2*margin + maxCols*nodeW + (maxCols-1)*gapX,
		Height: 2*margin + (maxRow+1)*nodeH + maxRow*gapY,
	}
	pos := make([][2]int, len(order))
	for r := 0; r <= maxRow; r++ {
		ids := rows[r]
		rowW := len(ids)*nodeW + (len(ids)-1)*gapX
		x0 := (g.Width - rowW) / 2
		for c, i := range ids {
			pos[i] = [2]int{x0 + c*(nodeW+gapX), margin + r*(nodeH+gapY)}
		}
	}
	for i, name := range order {
		run, ok := states[name]
		status, timing := "not-run", ""
		if ok {
			status, timing = run.Status, run.Timing()
		}
		g.Nodes = append(g.Nodes, Node{Name: name, Type: types[name], X: pos[i][0], Y: pos[i][1], W: nodeW, H: nodeH, Status: status, Timing: timing})
	}
	for _, e := range edges {
		f, okf := index[e.from]
		t, okt := index[e.to]
		if !okf || !okt {
			continue
		}
		x1, y1 := pos[f][0]+nodeW/2, pos[f][1]+nodeH
		x2, y2 := pos[t][0]+nodeW/2, pos[t][1]
		var pts []string
		if y2 > y1 {
			mid := y2 - gapY/2
			pts = []string{pt(x1, y1), pt(x1, mid), pt(x2, mid), pt(x2, y2)}
		} else { // a back edge: around the right side
			right := g.Width - margin/2
			pts = []string{pt(pos[f][0]+nodeW, pos[f][1]+nodeH/2), pt(right, pos[f][1]+nodeH/2), pt(right, pos[t][1]+nodeH/2), pt(pos[t][0]+nodeW, pos[t][1]+nodeH/2)}
		}
		g.Edges = append(g.Edges, Edge{Points: strings.Join(pts, " "), Caught: e.caught})
	}
	return g, nil
}

func pt(x, y int) string { return fmt.Sprintf("%d,%d", x, y) }
