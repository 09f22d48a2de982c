//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// platformManager is the NVML implementation over the real library.
func platformManager() Manager {
	return NewNVML(nvml.New())
}

// NVML is a Manager over an nvml.Interface: the real library from
// nvml.New(), or one of go-nvml's mock machines in tests.
type NVML struct {
	lib nvml.Interface
}

// NewNVML returns a Manager over lib.
func NewNVML(lib nvml.Interface) *NVML {
	return &NVML{lib: lib}
}

// retErr turns an NVML return code into an error: nil for SUCCESS,
// ErrNotSupported, ErrUnavailable for a missing library or driver, or a
// wrapped NVML error.
func retErr(what string, ret nvml.Return) error {
	switch ret {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		return fmt.Errorf("%s: %w", what, ErrNotSupported)
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_NO_PERMISSION, nvml.ERROR_UNINITIALIZED:
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, what, ret.Error())
	default:
		return fmt.Errorf("%s: nvml: %s", what, ret.Error())
	}
}

// Init implements Manager. A missing library or driver, or a machine
// without GPUs, wraps ErrUnavailable.
func (m *NVML) Init() (err error) {
	defer func() {
		// The real library panics on some broken installations; treat that
		// as "no NVML" rather than crashing a health check.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: nvml init: %v", ErrUnavailable, r)
		}
	}()
	if ret := m.lib.Init(); ret != nvml.SUCCESS {
		if e := retErr("nvml init", ret); errors.Is(e, ErrUnavailable) {
			return e
		}
		return fmt.Errorf("%w: nvml init: %s", ErrUnavailable, ret.Error())
	}
	return nil
}

// Shutdown implements Manager.
func (m *NVML) Shutdown() error {
	return retErr("nvml shutdown", m.lib.Shutdown())
}

// DriverVersion implements Manager.
func (m *NVML) DriverVersion() (string, error) {
	v, ret := m.lib.SystemGetDriverVersion()
	return v, retErr("driver version", ret)
}

// Devices implements Manager.
func (m *NVML) Devices() ([]Device, error) {
	n, ret := m.lib.DeviceGetCount()
	if err := retErr("device count", ret); err != nil {
		return nil, err
	}
	out := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		d, ret := m.lib.DeviceGetHandleByIndex(i)
		if err := retErr(fmt.Sprintf("device %d", i), ret); err != nil {
			return out, err
		}
		out = append(out, newNVMLDevice(i, d))
	}
	return out, nil
}

// WaitXid implements Manager. It registers every GPU for Xid critical
// errors and waits in short slices so ctx is honoured.
func (m *NVML) WaitXid(ctx context.Context, wait time.Duration) ([]XidEvent, error) {
	set, ret := m.lib.EventSetCreate()
	if err := retErr("create event set", ret); err != nil {
		return nil, err
	}
	defer set.Free()
	n, ret := m.lib.DeviceGetCount()
	if err := retErr("device count", ret); err != nil {
		return nil, err
	}
	uuids := map[string]int{}
	registered := 0
	for i := 0; i < n; i++ {
		d, ret := m.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		if u, ret := d.GetUUID(); ret == nvml.SUCCESS {
			uuids[u] = i
		}
		if d.RegisterEvents(nvml.EventTypeXidCriticalError, set) == nvml.SUCCESS {
			registered++
		}
	}
	if registered == 0 {
		return nil, fmt.Errorf("register Xid events: %w", ErrNotSupported)
	}
	var out []XidEvent
	deadline := time.Now().Add(wait)
	for ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		slice := min(left, 500*time.Millisecond)
		data, ret := set.Wait(uint32(max(slice.Milliseconds(), 1)))
		switch ret {
		case nvml.SUCCESS:
			if data.EventType != nvml.EventTypeXidCriticalError {
				continue
			}
			ev := XidEvent{Device: -1, Xid: int(data.EventData), Time: time.Now()}
			if data.Device != nil {
				if u, ret := data.Device.GetUUID(); ret == nvml.SUCCESS {
					ev.UUID = u
					if i, ok := uuids[u]; ok {
						ev.Device = i
					}
				}
			}
			out = append(out, ev)
		case nvml.ERROR_TIMEOUT:
		default:
			return out, retErr("wait for Xid events", ret)
		}
	}
	return out, nil
}

// nvmlDevice is a Device over an nvml.Device; identity is read once.
type nvmlDevice struct {
	d     nvml.Device
	index int
	uuid  string
	name  string
	busID string
}

func newNVMLDevice(index int, d nvml.Device) *nvmlDevice {
	nd := &nvmlDevice{d: d, index: index}
	nd.uuid, _ = d.GetUUID()
	nd.name, _ = d.GetName()
	if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		nd.busID = cString(pci.BusId[:])
	}
	return nd
}

// cString converts a NUL-terminated C char array to a string.
func cString[T int8 | uint8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// Index implements Device.
func (n *nvmlDevice) Index() int { return n.index }

// UUID implements Device.
func (n *nvmlDevice) UUID() string { return n.uuid }

// Name implements Device.
func (n *nvmlDevice) Name() string { return n.name }

// BusID implements Device.
func (n *nvmlDevice) BusID() string { return n.busID }

// ECC implements Device.
func (n *nvmlDevice) ECC() (ECCCounts, error) {
	var c ECCCounts
	var ret nvml.Return
	c.Volatile, ret = n.d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	if err := retErr("volatile ECC", ret); err != nil {
		return c, err
	}
	c.Aggregate, ret = n.d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)
	return c, retErr("aggregate ECC", ret)
}

// RetiredPages implements Device.
func (n *nvmlDevice) RetiredPages() (RetiredPages, error) {
	var r RetiredPages
	pending, ret := n.d.GetRetiredPagesPendingStatus()
	if err := retErr("retired pages pending", ret); err != nil {
		return r, err
	}
	r.Pending = pending == nvml.FEATURE_ENABLED
	pages, ret := n.d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
	r.DoubleBit = len(pages)
	return r, retErr("retired pages", ret)
}

// RemappedRows implements Device.
func (n *nvmlDevice) RemappedRows() (RemappedRows, error) {
	corr, unc, pending, failed, ret := n.d.GetRemappedRows()
	return RemappedRows{Correctable: corr, Uncorrectable: unc, Pending: pending, Failed: failed}, retErr("remapped rows", ret)
}

// NVLinks implements Device.
func (n *nvmlDevice) NVLinks() ([]NVLink, error) {
	var links []NVLink
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		state, ret := n.d.GetNvLinkState(l)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if err := retErr(fmt.Sprintf("nvlink %d state", l), ret); err != nil {
			return links, err
		}
		link := NVLink{Link: l, Active: state == nvml.FEATURE_ENABLED}
		counters := []struct {
			kind nvml.NvLinkErrorCounter
			dst  *uint64
		}{
			{nvml.NVLINK_ERROR_DL_REPLAY, &link.Replay},
			{nvml.NVLINK_ERROR_DL_RECOVERY, &link.Recovery},
			{nvml.NVLINK_ERROR_DL_CRC_FLIT, &link.CRCFlit},
			{nvml.NVLINK_ERROR_DL_CRC_DATA, &link.CRCData},
		}
		for _, c := range counters {
			if v, ret := n.d.GetNvLinkErrorCounter(l, c.kind); ret == nvml.SUCCESS {
				*c.dst = v
			}
		}
		links = append(links, link)
	}
	return links, nil
}

// Thermal implements Device.
func (n *nvmlDevice) Thermal() (Thermal, error) {
	var t Thermal
	temp, ret := n.d.GetTemperature(nvml.TEMPERATURE_GPU)
	if err := retErr("temperature", ret); err != nil {
		return t, err
	}
	t.TempC = int(temp)
	reasons, ret := n.d.GetCurrentClocksThrottleReasons()
	if ret == nvml.SUCCESS {
		t.Throttle = reasons
	}
	return t, nil
}

// PCIe implements Device.
func (n *nvmlDevice) PCIe() (PCIeLink, error) {
	var p PCIeLink
	var ret nvml.Return
	steps := []struct {
		what string
		get  func() (int, nvml.Return)
		dst  *int
	}{
		{"PCIe generation", n.d.GetCurrPcieLinkGeneration, &p.CurGen},
		{"PCIe max generation", n.d.GetMaxPcieLinkGeneration, &p.MaxGen},
		{"PCIe width", n.d.GetCurrPcieLinkWidth, &p.CurWidth},
		{"PCIe max width", n.d.GetMaxPcieLinkWidth, &p.MaxWidth},
	}
	for _, s := range steps {
		*s.dst, ret = s.get()
		if err := retErr(s.what, ret); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Usage implements Device.
func (n *nvmlDevice) Usage() (Usage, error) {
	var u Usage
	util, ret := n.d.GetUtilizationRates()
	if err := retErr("utilization", ret); err != nil {
		return u, err
	}
	u.SMPercent = int(util.Gpu)
	mem, ret := n.d.GetMemoryInfo()
	if err := retErr("memory info", ret); err != nil {
		return u, err
	}
	u.MemUsed, u.MemTotal = mem.Used, mem.Total
	return u, nil
}
