package gpu

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Fallback is a Manager that uses Primary when it starts and switches to
// Null, with the start error as the reason, when it does not. Until Init is
// called it behaves as uninitialised Primary.
type Fallback struct {
	// Primary is the preferred implementation (NVML).
	Primary Manager

	mu     sync.Mutex
	active Manager
}

// Open returns a Fallback over the platform's NVML implementation (Null on
// builds without Linux and cgo), already initialised. It never fails: when
// NVML cannot start, every later call reports ErrUnavailable with the reason.
func Open() *Fallback {
	f := &Fallback{Primary: platformManager()}
	_ = f.Init()
	return f
}

// OpenSimulated returns a Fallback over Simulate(spec), already
// initialised: go-nvml's mock machine instead of the driver, for tests and
// demonstrations on hosts without GPUs.
func OpenSimulated(spec string) (*Fallback, error) {
	m, err := Simulate(spec)
	if err != nil {
		return nil, err
	}
	f := &Fallback{Primary: m}
	if err := f.Init(); err != nil {
		return nil, fmt.Errorf("start simulated GPUs %q: %w", spec, err)
	}
	return f, nil
}

// Init implements Manager; the error is the primary's start error, and the
// Fallback then answers as Null.
func (f *Fallback) Init() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active != nil {
		return f.startErr()
	}
	if err := f.Primary.Init(); err != nil {
		f.active = Null{Reason: reasonOf(err)}
		return f.startErr()
	}
	f.active = f.Primary
	return nil
}

func (f *Fallback) startErr() error {
	if n, ok := f.active.(Null); ok {
		return n.err()
	}
	return nil
}

func reasonOf(err error) string {
	msg := err.Error()
	prefix := ErrUnavailable.Error() + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

// Available reports whether the primary implementation started.
func (f *Fallback) Available() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, isNull := f.active.(Null)
	return f.active != nil && !isNull
}

func (f *Fallback) current() Manager {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == nil {
		return Null{Reason: "not initialised"}
	}
	return f.active
}

// Shutdown implements Manager.
func (f *Fallback) Shutdown() error {
	if err := f.current().Shutdown(); err != nil {
		return fmt.Errorf("shut down NVML: %w", err)
	}
	return nil
}

// DriverVersion implements Manager.
func (f *Fallback) DriverVersion() (string, error) { return f.current().DriverVersion() }

// Devices implements Manager.
func (f *Fallback) Devices() ([]Device, error) { return f.current().Devices() }

// WaitXid implements Manager.
func (f *Fallback) WaitXid(ctx context.Context, wait time.Duration) ([]XidEvent, error) {
	return f.current().WaitXid(ctx, wait)
}
