// Package gpu reads GPU health and usage through small Manager and Device
// interfaces. The NVML implementation needs Linux and cgo; elsewhere, or
// when the NVIDIA driver is absent, a null implementation reports every
// figure as unavailable, which callers treat as "no GPU", never as a fault.
package gpu

import (
	"context"
	"errors"
	"time"
)

// Errors shared by all implementations.
var (
	// ErrUnavailable reports that GPU management (NVML) cannot be used:
	// no driver, no GPU, or a build without cgo.
	ErrUnavailable = errors.New("GPU management (NVML) unavailable")
	// ErrNotSupported reports a query the GPU or driver does not support.
	ErrNotSupported = errors.New("not supported by this GPU")
)

// Manager gives access to a node's GPUs.
type Manager interface {
	// Init starts the library; it returns an error wrapping ErrUnavailable
	// when there is no driver or no GPU.
	Init() error
	// Shutdown releases the library.
	Shutdown() error
	// DriverVersion returns the driver version.
	DriverVersion() (string, error)
	// Devices returns every GPU in index order.
	Devices() ([]Device, error)
	// WaitXid collects Xid critical-error events that occur on any GPU
	// within wait (or until ctx ends).
	WaitXid(ctx context.Context, wait time.Duration) ([]XidEvent, error)
}

// Device is one GPU.
type Device interface {
	// Index is the NVML index.
	Index() int
	// UUID is the GPU's UUID ("GPU-...").
	UUID() string
	// Name is the product name.
	Name() string
	// BusID is the PCI bus id.
	BusID() string
	// ECC returns the uncorrectable ECC error counters.
	ECC() (ECCCounts, error)
	// RetiredPages returns page retirement state (pre-Ampere GPUs).
	RetiredPages() (RetiredPages, error)
	// RemappedRows returns row remapping state (Ampere and newer).
	RemappedRows() (RemappedRows, error)
	// NVLinks returns the state and error counters of every link the GPU
	// reports; an empty list means the GPU has no NVLink.
	NVLinks() ([]NVLink, error)
	// Thermal returns the temperature and clock throttle reasons.
	Thermal() (Thermal, error)
	// PCIe returns the current and maximum PCIe link.
	PCIe() (PCIeLink, error)
	// Usage returns the current SM utilisation and memory use.
	Usage() (Usage, error)
}

// ECCCounts are uncorrectable ECC error counters.
type ECCCounts struct {
	// Volatile counts since the last driver load.
	Volatile uint64 `json:"volatile_uncorrected"`
	// Aggregate counts over the GPU's lifetime.
	Aggregate uint64 `json:"aggregate_uncorrected"`
}

// RetiredPages is the page retirement state of a pre-Ampere GPU.
type RetiredPages struct {
	// DoubleBit is the number of pages retired for double-bit errors.
	DoubleBit int `json:"double_bit"`
	// Pending is set when a retirement waits for the next driver reload.
	Pending bool `json:"pending"`
}

// RemappedRows is the row remapping state of an Ampere-or-newer GPU.
type RemappedRows struct {
	Correctable   int  `json:"correctable"`
	Uncorrectable int  `json:"uncorrectable"`
	Pending       bool `json:"pending"`
	Failed        bool `json:"failed"`
}

// NVLink is one link's state and error counters.
type NVLink struct {
	Link     int    `json:"link"`
	Active   bool   `json:"active"`
	Replay   uint64 `json:"replay"`
	Recovery uint64 `json:"recovery"`
	CRCFlit  uint64 `json:"crc_flit"`
	CRCData  uint64 `json:"crc_data"`
}

// Throttle reasons, as NVML's clock event reason bits.
const (
	ThrottleSWThermal  uint64 = 0x20
	ThrottleHWSlowdown uint64 = 0x08
	ThrottleHWThermal  uint64 = 0x40
	ThrottlePowerBrake uint64 = 0x80
)

// Thermal is the temperature and throttle state.
type Thermal struct {
	// TempC is the GPU core temperature.
	TempC int `json:"temp_c"`
	// Throttle is the NVML clock throttle (event) reason bit mask.
	Throttle uint64 `json:"throttle"`
}

// PCIeLink is the current and maximum PCIe generation and width.
type PCIeLink struct {
	CurGen   int `json:"cur_gen"`
	MaxGen   int `json:"max_gen"`
	CurWidth int `json:"cur_width"`
	MaxWidth int `json:"max_width"`
}

// Usage is a point sample of utilisation.
type Usage struct {
	// SMPercent is the GPU (SM) utilisation over the driver's last sample
	// period.
	SMPercent int `json:"sm_percent"`
	// MemUsed and MemTotal are framebuffer bytes.
	MemUsed  uint64 `json:"mem_used_bytes"`
	MemTotal uint64 `json:"mem_total_bytes"`
}

// XidEvent is one Xid critical error reported by the driver.
type XidEvent struct {
	// Device is the GPU index, -1 when the driver did not say.
	Device int `json:"device"`
	// UUID is the GPU's UUID when known.
	UUID string `json:"uuid,omitempty"`
	// Xid is the error code.
	Xid int `json:"xid"`
	// Time is when the event was read.
	Time time.Time `json:"time"`
}
