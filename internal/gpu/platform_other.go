//go:build !(linux && cgo)

package gpu

import "fmt"

// platformManager is Null where NVML cannot be linked.
func platformManager() Manager {
	return Null{Reason: "built without NVML support (needs Linux and cgo)"}
}

// Simulate needs the NVML bindings, which need Linux and cgo.
func Simulate(spec string) (Manager, error) {
	return nil, fmt.Errorf("simulated GPUs %q: %w: built without NVML support (needs Linux and cgo)", spec, ErrUnavailable)
}
