// Package hostlist expands and compresses Slurm host lists such as
// "gpu[01-04,07],cpu1".
package hostlist

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxHosts bounds how many names Expand produces, so a hostile range such as
// "n[0-999999999]" cannot exhaust memory.
const MaxHosts = 1 << 20

// Expand turns a Slurm host list into host names, in order. Empty input gives
// no names. Nested or unbalanced brackets, descending or oversized ranges are errors.
func Expand(list string) ([]string, error) {
	var hosts []string
	for _, item := range splitTop(list) {
		if item == "" {
			continue
		}
		names, err := expandItem(item, MaxHosts-len(hosts))
		if err != nil {
			return nil, fmt.Errorf("expand host list %q: %w", list, err)
		}
		hosts = append(hosts, names...)
	}
	return hosts, nil
}

// splitTop splits on commas outside brackets.
func splitTop(list string) []string {
	var items []string
	depth, start := 0, 0
	for i, r := range list {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, strings.TrimSpace(list[start:i]))
				start = i + 1
			}
		}
	}
	return append(items, strings.TrimSpace(list[start:]))
}

// expandItem expands one item that may hold several bracket groups, e.g. "r[1-2]n[1-3]".
func expandItem(item string, room int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("unbalanced ']' in %q", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("unbalanced '[' in %q", item)
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	if strings.ContainsAny(body, "[") || strings.ContainsAny(prefix, "]") {
		return nil, fmt.Errorf("nested brackets in %q", item)
	}
	nums, err := expandRanges(body, room)
	if err != nil {
		return nil, err
	}
	tails := []string{""}
	if rest != "" {
		if tails, err = expandItem(rest, room); err != nil {
			return nil, err
		}
	}
	if len(nums)*len(tails) > room {
		return nil, fmt.Errorf("more than %d hosts", MaxHosts)
	}
	out := make([]string, 0, len(nums)*len(tails))
	for _, n := range nums {
		for _, t := range tails {
			out = append(out, prefix+n+t)
		}
	}
	return out, nil
}

// expandRanges expands "01-04,07" keeping the zero padding of the lower bound.
func expandRanges(body string, room int) ([]string, error) {
	var out []string
	for _, part := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isDigits(lo) || (isRange && !isDigits(hi)) {
			return nil, fmt.Errorf("bad range %q", part)
		}
		if !isRange {
			out = append(out, lo)
			continue
		}
		a, errA := strconv.ParseUint(lo, 10, 63)
		b, errB := strconv.ParseUint(hi, 10, 63)
		if errA != nil || errB != nil || b < a {
			return nil, fmt.Errorf("bad range %q", part)
		}
		if b-a >= uint64(room-len(out)) {
			return nil, fmt.Errorf("more than %d hosts", MaxHosts)
		}
		width := len(lo)
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%0*d", width, n))
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Compress turns host names into a compact Slurm host list: names that share
// a prefix and number width become one bracket group. Duplicates are dropped;
// groups keep the order in which their prefix first appears.
func Compress(hosts []string) string {
	type key struct {
		prefix string
		width  int
	}
	groups := map[key][]uint64{}
	var order []key
	var plain []string
	seenPlain := map[string]bool{}
	firstSeen := map[key]int{}
	plainAt := map[string]int{}
	for i, h := range hosts {
		prefix, digits := splitNumericSuffix(h)
		n, err := strconv.ParseUint(digits, 10, 63)
		if digits == "" || err != nil {
			if !seenPlain[h] {
				seenPlain[h] = true
				plain = append(plain, h)
				plainAt[h] = i
			}
			continue
		}
		k := key{prefix, len(digits)}
		if digits[0] != '0' {
			k.width = 0 // unpadded numbers of any length share a group
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
			firstSeen[k] = i
		}
		groups[k] = append(groups[k], n)
	}
	type part struct {
		at   int
		text string
	}
	var parts []part
	for _, h := range plain {
		parts = append(parts, part{plainAt[h], h})
	}
	for _, k := range order {
		nums := groups[k]
		sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
		var ranges []string
		for i := 0; i < len(nums); {
			j := i
			for j+1 < len(nums) && nums[j+1] <= nums[j]+1 {
				j++
			}
			lo, hi := fmt.Sprintf("%0*d", k.width, nums[i]), fmt.Sprintf("%0*d", k.width, nums[j])
			if lo == hi {
				ranges = append(ranges, lo)
			} else {
				ranges = append(ranges, lo+"-"+hi)
			}
			i = j + 1
		}
		text := k.prefix + ranges[0]
		if len(ranges) > 1 || strings.Contains(ranges[0], "-") {
			text = k.prefix + "[" + strings.Join(ranges, ",") + "]"
		}
		parts = append(parts, part{firstSeen[k], text})
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].at < parts[j].at })
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.text
	}
	return strings.Join(texts, ",")
}

// splitNumericSuffix splits "gpu07" into "gpu" and "07".
func splitNumericSuffix(h string) (string, string) {
	i := len(h)
	for i > 0 && h[i-1] >= '0' && h[i-1] <= '9' {
		i--
	}
	return h[:i], h[i:]
}
