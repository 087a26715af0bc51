// Package handler maps the compile function's events to its service and back; the
// Lambda (functions/compile) and the embedded runtime both call it.
package handler

import (
	"context"

	"github.com/ora-runtime/ora/shared/ora"
	"github.com/ora-runtime/ora/shared/taskerr"
)

// Compiler compiles and persists a wave's packet; *orient.Compiler is one.
type Compiler interface {
	// CompileUnder returns the wave's packet, compiled under the
	// operator's input patch (nil: none), which the packet then records.
	// Errors: EINVALID, ENOTFOUND, ETRANSIENT.
	CompileUnder(ctx context.Context, signalID string, patch *ora.AppPatch) (ora.OrientationPacket, error)
}

// Input is the Compile task's input; other fields of the execution state are
// ignored.
type Input struct {
	SignalID string `json:"signal_id"`
	// AppPatch is the app patch a resume handed the wave (null when it was
	// never resumed with one): an input patch is recorded in the packet
	// with the sha256 of the payload as patched, the payload Reason reads.
	AppPatch *ora.AppPatch `json:"app_patch,omitempty"`
}

// Output summarizes the packet; it is stored at $.packet.
type Output struct {
	PacketID    string `json:"packet_id"`
	Digest      string `json:"digest"`
	TokenUsed   int    `json:"token_used"`
	TokenBudget int    `json:"token_budget"`
}

// Handler answers the state machine's Compile task.
type Handler struct {
	Compiler Compiler
}

// Handle compiles the wave of in.SignalID. Errors are taskerr types.
func (h Handler) Handle(ctx context.Context, in Input) (Output, error) {
	if in.SignalID == "" {
		return Output{}, taskerr.From(ora.Invalid("signal_id", "required"))
	}
	p, err := h.Compiler.CompileUnder(ctx, in.SignalID, in.AppPatch)
	if err != nil {
		return Output{}, taskerr.From(err)
	}
	return Output{PacketID: p.ID, Digest: p.Digest, TokenUsed: p.TokenUsed, TokenBudget: p.TokenBudget}, nil
}
