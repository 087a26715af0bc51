package orient

import (
	"context"
	"fmt"

	"github.com/ora-runtime/ora/shared/ora"
)

// Service is what the orientation API and CLI call: the current profile,
// proposals and their decisions, a wave's packet, feedback and replay
// verification.
type Service struct {
	*Profiles
	compiler *Compiler
}

// NewService returns the orientation service over store.
func NewService(store Store, opts ...func(*Options)) *Service {
	return &Service{Profiles: NewProfiles(store, opts...), compiler: NewCompiler(store, opts...)}
}

// CurrentProfile returns the default profile's current version. Errors:
// ETRANSIENT.
func (s *Service) CurrentProfile(ctx context.Context) (ora.Profile, error) {
	return s.Current(ctx, s.o.ProfileID)
}

// Packet returns a wave's orientation packet, its digest checked. Errors:
// ENOTFOUND, EINVALID, ETRANSIENT.
func (s *Service) Packet(ctx context.Context, waveID string) (ora.OrientationPacket, error) {
	es, err := s.store.Entries(ctx, waveID)
	if err != nil {
		return ora.OrientationPacket{}, fmt.Errorf("orient: packet of %s: %w", waveID, err)
	}
	p, err := Packet(es)
	if ora.ErrorCode(err) == ora.ENOTFOUND {
		if xerr := s.compiler.expiredPacket(ctx, waveID, es); xerr != nil {
			return ora.OrientationPacket{}, fmt.Errorf("orient: packet of %s: %w", waveID, xerr)
		}
	}
	return p, err
}

// Verify replays a wave's packet (Compiler.Verify).
func (s *Service) Verify(ctx context.Context, waveID string) (Verification, error) {
	return s.compiler.Verify(ctx, waveID)
}
