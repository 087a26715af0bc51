package stepfn

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// frameCP is the checkpoint of one flow (the execution, a Parallel branch, a
// Map iteration): the state it is in and that state's raw input, plus what a
// resumed or redriven run needs to continue that state.
type frameCP struct {
	State     string          `json:"state"`
	Input     json.RawMessage `json:"input"`
	Entered   bool            `json:"entered,omitempty"`
	EnteredAt time.Time       `json:"enteredAt,omitzero"`
	Retries   []int64         `json:"retries,omitempty"`
	Token     string          `json:"token,omitempty"`
	Invoked   bool            `json:"invoked,omitempty"`
	TaskStart time.Time       `json:"taskStart,omitzero"`
	WaitUntil time.Time       `json:"waitUntil,omitzero"`
	Children  []*childCP      `json:"children,omitempty"`
	Parts     int             `json:"parts,omitempty"` // children kept as parts of a PartStore instead
	Vars      json.RawMessage `json:"vars,omitempty"`  // the variables the flow assigned

	input any
	vars  map[string]any // Vars, as values during a run
}

// childCP is a branch or iteration of the Parallel or Map state a frame is in.
type childCP struct {
	Status string          `json:"status,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Frame  *frameCP        `json:"frame,omitempty"`

	out   any    // the output, before it is marshalled into Output
	key   string // its key as a part of a PartStore's checkpoint
	dirty bool   // changed since it was last saved as a part
}

// childKey returns the part key of child i of the flow whose part key is
// parent ("" for the execution's own flow).
func childKey(parent string, i int) string {
	if parent == "" {
		return strconv.Itoa(i)
	}
	return parent + "/" + strconv.Itoa(i)
}

// shallowJSON marshals the flow's checkpoint with its children counted in
// Parts instead of included: each is a part of its own. Without withInput
// the input is left out too (the execution's own flow keeps it as the part
// inputPart, written when it changes, not with every event). Call with the
// execution's lock held.
func (cp *frameCP) shallowJSON(withInput bool) []byte {
	if cp.Input == nil {
		cp.Input = marshal(cp.input)
	}
	if cp.Vars == nil && len(cp.vars) > 0 {
		cp.Vars = marshal(cp.vars)
	}
	s := *cp
	s.Children, s.Parts = nil, len(cp.Children)
	if !withInput {
		s.Input = nil
	}
	return marshal(&s)
}

// inputPart is the key of the part holding the input of the execution's own
// flow.
const inputPart = "input"

// partCP is a child as a part of a PartStore's checkpoint: its frame's own
// children are parts of their own.
type partCP struct {
	Status string          `json:"status,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Frame  json.RawMessage `json:"frame,omitempty"`
}

// partJSON marshals the child as a part. Call with the execution's lock held.
func (c *childCP) partJSON() []byte {
	c.Output = nil
	if c.Status != "" {
		c.Output = marshal(c.out)
	}
	p := partCP{Status: c.Status, Output: c.Output}
	if c.Frame != nil {
		p.Frame = c.Frame.shallowJSON(true)
	}
	return marshal(&p)
}

// loadParts puts back the children a PartStore kept apart (parts, by key)
// into the flow whose part key is key, and gives every child of the tree its
// key. A checkpoint written whole (children included) loads as it is.
func (cp *frameCP) loadParts(key string, parts map[string][]byte) error {
	if cp.Parts > 0 && len(cp.Children) == 0 {
		cp.Children = make([]*childCP, cp.Parts)
		for i := range cp.Children {
			k := childKey(key, i)
			b, ok := parts[k]
			if !ok {
				return fmt.Errorf("checkpoint part %q is missing", k)
			}
			c := &childCP{}
			if err := json.Unmarshal(b, c); err != nil {
				return fmt.Errorf("checkpoint part %q: %w", k, err)
			}
			cp.Children[i] = c
		}
	}
	cp.Parts = 0
	for i, c := range cp.Children {
		c.key = childKey(key, i)
		if c.Frame != nil {
			if err := c.Frame.loadParts(c.key, parts); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillOutputs marshals the inputs of the frames and the outputs of the
// children before the checkpoint is: during a run a frame keeps them as
// values only. Call with the execution's lock held.
func (cp *frameCP) fillOutputs() {
	if cp.Input == nil {
		cp.Input = marshal(cp.input)
	}
	if cp.Vars == nil && len(cp.vars) > 0 {
		cp.Vars = marshal(cp.vars)
	}
	for _, c := range cp.Children {
		c.Output = nil
		if c.Status != "" {
			c.Output = marshal(c.out)
		}
		if c.Frame != nil {
			c.Frame.fillOutputs()
		}
	}
}

// startCheckpoint is marshal(&frameCP{State: state, Input: input}), the
// checkpoint of a flow that has not entered its first state, without
// encoding/json's reflection.
func startCheckpoint(state string, input []byte) []byte {
	b := make([]byte, 0, len(input)+len(state)+24)
	b = appendString(append(b, `{"state":`...), state)
	b = append(append(b, `,"input":`...), input...)
	return append(b, '}')
}

func (cp *frameCP) prepareResume() {
	cp.input, _ = parseJSON(cp.Input)
	cp.parseVars()
	for _, c := range cp.Children {
		if c.Output != nil {
			c.out, _ = parseJSON(c.Output)
		}
		if c.Frame != nil {
			c.Frame.prepareResume()
		}
	}
}

// parseVars restores the flow's variables from a checkpoint.
func (cp *frameCP) parseVars() {
	if len(cp.Vars) > 0 {
		v, _ := parseJSON(cp.Vars)
		cp.vars, _ = v.(map[string]any)
	}
}

func (cp *frameCP) prepareRedrive() {
	cp.input, _ = parseJSON(cp.Input)
	cp.parseVars()
	cp.Entered, cp.Retries, cp.Token, cp.Invoked = false, nil, "", false
	cp.TaskStart, cp.WaitUntil = time.Time{}, time.Time{}
	for _, c := range cp.Children {
		if c.Output != nil {
			c.out, _ = parseJSON(c.Output)
		}
		if c.Status != StatusSucceeded {
			c.Status = ""
			if c.Frame != nil {
				c.Frame.prepareRedrive()
			}
		}
	}
}

// markDirty records that child c changed since the last save, so that the
// next save writes it, when the store keeps checkpoints in parts. nil stands
// for the execution's own flow, saved with every event. Call with x.mu held.
func (x *execution) markDirty(c *childCP) {
	if c == nil || c.dirty || x.e.parts == nil {
		return
	}
	c.dirty = true
	x.dirty = append(x.dirty, c)
}

// markTree marks every child under cp changed: after a resume or a redrive,
// the next save writes them all.
func (x *execution) markTree(cp *frameCP) {
	for _, c := range cp.Children {
		x.markDirty(c)
		if c.Frame != nil {
			x.markTree(c.Frame)
		}
	}
}

// takeParts marshals the changed children as parts and forgets them. Call
// with x.mu held.
func (x *execution) takeParts() []CheckpointPart {
	if len(x.dirty) == 0 {
		return nil
	}
	parts := make([]CheckpointPart, len(x.dirty))
	for i, c := range x.dirty {
		parts[i] = CheckpointPart{Key: c.key, Data: c.partJSON()}
		c.dirty = false
		x.dirty[i] = nil
	}
	x.dirty = x.dirty[:0]
	return parts
}
