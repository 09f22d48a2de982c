package metaagent

import (
	"math"
	"strconv"
	"strings"
)

// voted is the agent's answer after voting, as cached.
type voted struct {
	Values     map[string]string  `json:"values"`
	Confidence map[string]float64 `json:"confidence"`
	Evidence   map[string]string  `json:"evidence"`
}

// vote keeps, per field, the value most samples agree on when it has a
// majority of all samples and at least one of its supporters quoted
// evidence that was verified.
func vote(runs []run, samples int) *voted {
	v := &voted{Values: map[string]string{}, Confidence: map[string]float64{}, Evidence: map[string]string{}}
	for _, field := range Fields {
		counts := map[string]int{}
		first := map[string]string{}
		evidence := map[string]string{}
		for _, r := range runs {
			val, ok := r.values[field]
			if !ok {
				continue
			}
			k := strings.ToLower(val)
			counts[k]++
			if _, ok := first[k]; !ok {
				first[k] = val
			}
			if e, ok := r.evidence[field]; ok && evidence[k] == "" {
				evidence[k] = e
			}
		}
		best, bestN := "", 0
		for k, n := range counts {
			if n > bestN || n == bestN && k < best {
				best, bestN = k, n
			}
		}
		if bestN*2 <= samples || evidence[best] == "" {
			continue
		}
		v.Values[field] = first[best]
		v.Confidence[field] = float64(bestN) / float64(samples)
		v.Evidence[field] = evidence[best]
	}
	return v
}

// merge combines static metadata with the agent's voted values: static
// wins conflicts, the agent fills empty fields.
func merge(static Metadata, v *voted, note string) Result {
	r := Result{Metadata: static, Sources: map[string]string{}, Note: note}
	for _, f := range Fields {
		if static.get(f) != "" {
			r.Sources[f] = "static"
		}
	}
	if v == nil {
		return r
	}
	for _, f := range Fields {
		val, ok := v.Values[f]
		if !ok {
			continue
		}
		if cur := static.get(f); cur != "" {
			if !strings.EqualFold(cur, val) {
				r.Conflicts = append(r.Conflicts, Conflict{Field: f, Static: cur, Agent: val})
			}
			continue
		}
		r.Metadata.set(f, val)
		r.Sources[f] = "agent"
		if r.Confidence == nil {
			r.Confidence, r.Evidence = map[string]float64{}, map[string]string{}
		}
		r.Confidence[f] = v.Confidence[f]
		r.Evidence[f] = v.Evidence[f]
	}
	return r
}

// normalise checks a reported value for its field and returns it cleaned.
func normalise(field, value string) (string, bool) {
	s := strings.Trim(strings.TrimSpace(value), `"'`+"`")
	switch strings.ToLower(s) {
	case "", "unknown", "n/a", "na", "none", "null", "nil", "?", "-":
		return "", false
	}
	switch field {
	case "model", "dataset":
		return s, len(s) <= 200
	case "framework":
		return strings.ToLower(s), len(s) <= 50
	case "batch_size", "epochs", "steps", "seq_len":
		n, ok := parseCount(s)
		if !ok {
			return "", false
		}
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}

// parseCount reads a positive count such as "512", "1,024", "100_000",
// "32k", "1.5M" or "1e5".
func parseCount(s string) (int64, bool) {
	s = strings.NewReplacer(",", "", "_", "").Replace(strings.TrimSpace(s))
	mult := 1.0
	if n := len(s); n > 1 {
		switch s[n-1] {
		case 'k', 'K':
			mult, s = 1e3, s[:n-1]
		case 'm', 'M':
			mult, s = 1e6, s[:n-1]
		case 'b', 'B':
			mult, s = 1e9, s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	f *= mult
	if f < 1 || f > 1e12 || f != math.Trunc(f) || math.IsNaN(f) {
		return 0, false
	}
	return int64(f), true
}
