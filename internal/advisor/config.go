package advisor

import "github.com/schedmate/schedmate/internal/config"

// FromConfig returns the retrieval options and submit policy of the
// configuration's advisor section; unset values keep their defaults.
func FromConfig(c config.Advisor) (Options, Policy) {
	o := DefaultOptions()
	if c.TopK > 0 {
		o.TopK = c.TopK
	}
	if c.Threshold > 0 && c.Threshold <= 1 {
		o.Threshold = float32(c.Threshold)
	}
	return o, Policy{SetTimeMin: c.SetTimeMin, SetNice: c.SetNice}
}
