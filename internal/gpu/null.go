package gpu

import (
	"context"
	"fmt"
	"time"
)

// Null is a Manager for nodes without usable GPUs: every call fails with an
// error wrapping ErrUnavailable that carries Reason.
type Null struct {
	// Reason says why GPUs are unavailable ("no NVIDIA driver", ...).
	Reason string
}

func (n Null) err() error {
	if n.Reason == "" {
		return ErrUnavailable
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, n.Reason)
}

// Init implements Manager.
func (n Null) Init() error { return n.err() }

// Shutdown implements Manager.
func (n Null) Shutdown() error { return nil }

// DriverVersion implements Manager.
func (n Null) DriverVersion() (string, error) { return "", n.err() }

// Devices implements Manager.
func (n Null) Devices() ([]Device, error) { return nil, n.err() }

// WaitXid implements Manager.
func (n Null) WaitXid(context.Context, time.Duration) ([]XidEvent, error) { return nil, n.err() }
