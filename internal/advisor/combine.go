package advisor

import (
	"cmp"
	"math"
	"slices"
)

// rerunSpread is how far, in log duration, a run is taken to stray from an
// earlier run of its kind: anywhere within 20% of it (ln 1.2), uniformly.
// It makes the point estimate rest on where the durations cluster rather
// than on the exact durations at a cluster's edge.
const rerunSpread = 0.18232155679395462

// share is one duration's share of the candidates' weight.
type share struct{ d, p float64 }

// survival returns the shares of the durations of the candidates accepted
// by keep, shortest first, summing to 1. Censored candidates (jobs still
// running) are weighed as survivors past their elapsed time, as in a
// Kaplan-Meier estimate: their weight passes to the longer ended durations,
// and what is left beyond every ended duration goes to the longest elapsed
// time.
func survival(c []candidate, keep func(*candidate) bool) []share {
	type dw struct {
		d, w     float64
		censored bool
	}
	xs := make([]dw, 0, len(c))
	var atRisk float64
	for i := range c {
		if keep(&c[i]) {
			xs = append(xs, dw{float64(c[i].rec.DurationS), c[i].w, c[i].censored})
			atRisk += c[i].w
		}
	}
	if len(xs) == 0 {
		return nil
	}
	slices.SortFunc(xs, func(a, b dw) int {
		if r := cmp.Compare(a.d, b.d); r != 0 {
			return r
		}
		switch {
		case a.censored == b.censored:
			return 0
		case b.censored:
			return -1 // an ended run comes before a run still going as long
		default:
			return 1
		}
	})
	out := make([]share, 0, len(xs))
	surv := 1.0
	for _, x := range xs {
		if !x.censored {
			p := surv
			if atRisk > x.w { // else it is the last at risk, up to rounding
				p *= x.w / atRisk
			}
			out = append(out, share{x.d, p})
			surv -= p
		}
		atRisk -= x.w
	}
	if last := xs[len(xs)-1]; last.censored {
		out = append(out, share{last.d, surv})
	} else {
		out[len(out)-1].p += surv
	}
	return out
}

// quantile returns the q-quantile of shares (0 when there are none).
func quantile(s []share, q float64) float64 {
	var cum float64
	for _, x := range s {
		cum += x.p
		if cum >= q-1e-12 {
			return x.d
		}
	}
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].d
}

// pointEstimate returns the duration p the shares support best under the
// two scores an estimate is judged by: the share of durations it is within
// 2x of (p/2 <= d <= 2p), plus the share it does not over-estimate by more
// than 100% (p <= 2d). The second counts because an over-estimate costs more
// than an under-estimate: it holds a job back behind its own estimate. Each
// log duration is spread uniformly over ±rerunSpread, which makes the sum
// piecewise linear in log p with four kinks per duration, so a sweep over
// the sorted kinks finds its maximum exactly. Where the maximum is a
// plateau (the first, if several), the point of it nearest the median of
// the durations within 2x of its middle is taken, so that durations that
// are all equal give that duration. Sub-second durations count as one second. It is 0 when there
// are no shares.
func pointEstimate(s []share) float64 {
	// at log p = x, the sum's slope changes by slope
	type kink struct{ x, slope float64 }
	kinks := make([]kink, 0, 4*len(s))
	for _, x := range s {
		l := math.Log(max(x.d, 1))
		for _, k := range [4]struct{ off, slope float64 }{
			{-math.Ln2 - rerunSpread, x.p},     // 2p reaches the spread
			{-math.Ln2 + rerunSpread, -x.p},    // and covers it
			{math.Ln2 - rerunSpread, -2 * x.p}, // p/2 reaches it: both scores fall
			{math.Ln2 + rerunSpread, 2 * x.p},  // and passes it
		} {
			kinks = append(kinks, kink{l + k.off, k.slope})
		}
	}
	if len(kinks) == 0 {
		return 0
	}
	slices.SortFunc(kinks, func(a, b kink) int { return cmp.Compare(a.x, b.x) })
	const eps = 1e-9
	sum := 2 * rerunSpread // left of every kink, p/2 is below every duration
	best, first, last := math.Inf(-1), 0, 0
	onBest := false
	var slope float64
	for k := range kinks {
		if k > 0 {
			sum += slope * (kinks[k].x - kinks[k-1].x)
		}
		slope += kinks[k].slope
		switch {
		case sum > best+eps:
			best, first, last, onBest = sum, k, k, true
		case onBest && sum >= best-eps:
			last = k
		default:
			onBest = false
		}
	}
	lo, hi := math.Exp(kinks[first].x), math.Exp(kinks[last].x)
	return min(max(windowMedian(s, math.Sqrt(lo*hi)), lo), hi)
}

// windowMedian returns the median of the durations within 2x of p (p when
// there are none). Sub-second durations count as one second.
func windowMedian(s []share, p float64) float64 {
	in := func(x share) bool { d := max(x.d, 1); return d >= p/2 && d <= 2*p }
	var total float64
	for _, x := range s {
		if in(x) {
			total += x.p
		}
	}
	var cum float64
	for _, x := range s {
		if in(x) {
			if cum += x.p; cum >= total/2-1e-12 {
				return max(x.d, 1)
			}
		}
	}
	return p
}
