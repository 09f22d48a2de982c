//go:build !(linux && cgo)

package gpu

// platformManager is Null where NVML cannot be linked.
func platformManager() Manager {
	return Null{Reason: "built without NVML support (needs Linux and cgo)"}
}
