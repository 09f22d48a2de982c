package xid

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/schedmate/schedmate/internal/shareddata"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		want Event
		ok   bool
	}{
		{"[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
			Event{PCI: "0000:a1:00", Code: 79, Message: "GPU has fallen off the bus."}, true},
		{"May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
			Event{PCI: "0000:2b:00", Code: 79, Message: "GPU has fallen off the bus."}, true},
		{`"NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No"`,
			Event{PCI: "0000:01:00", Code: 94, PID: 7194, Message: "Contained: CE User Channel (0x9). RST: No, D-RST: No"}, true},
		{"kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
			Event{PCI: "0000:dc:00", Code: 45, PID: 1818990, Process: "python3", Message: "Ch 00000001 caused by previous Xid 149", CausedBy: 149}, true},
		{"NVRM: GPU at PCI:0000:a1:00: GPU-979426f2", Event{}, false},
		{"NVRM: Xid (PCI:0000:a1:00): x, bad", Event{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseLine(tt.line)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestEventAction(t *testing.T) {
	tests := []struct {
		e    Event
		want Action
	}{
		{Event{Code: 79}, ActionDrain},
		{Event{Code: 13}, ActionJob},
		{Event{Code: 43}, ActionIgnore},
		{Event{Code: 94}, ActionSoftDrain},
		{Event{Code: 45}, ActionIgnore},
		{Event{Code: 45, CausedBy: 48}, ActionDrain},
		{Event{Code: 149, Message: "NETIR_LINK_EVT Fatal error detected"}, ActionDrain},
		{Event{Code: 145, Message: "RLW Nonfatal XC0 i0"}, ActionIgnore},
		{Event{Code: 9999}, ActionJob},
	}
	for _, tt := range tests {
		if got := tt.e.Action(); got != tt.want {
			t.Errorf("%+v: action %s, want %s", tt.e, got, tt.want)
		}
	}
}

// TestScanCorpus checks the Xid codes found in every kernel-log sample of
// the shared corpus against its manifest.
func TestScanCorpus(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "nccl"), "other")
	f, err := os.Open(filepath.Join(dir, "manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma, r.LazyQuotes, r.FieldsPerRecord = '\t', true, -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	logKinds := map[string]bool{"dmesg": true, "syslog": true, "journald": true, "format_reference": true, "tool_output": true}
	checked := 0
	for _, rec := range recs[1:] {
		if len(rec) < 4 || !logKinds[rec[2]] {
			continue
		}
		want := codes(strings.Fields(strings.NewReplacer(",", " ", "(", " ", ")", " ").Replace(rec[3])))
		t.Run(rec[0], func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, rec[0]))
			if err != nil {
				t.Fatal(err)
			}
			events, err := Scan(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			got := map[int]bool{}
			for _, e := range events {
				got[e.Code] = true
				if e.CausedBy != 0 {
					got[e.CausedBy] = true
				}
			}
			if !reflect.DeepEqual(sortedCodes(got), want) {
				t.Errorf("codes = %v, want %v", sortedCodes(got), want)
			}
		})
		checked++
	}
	if checked == 0 {
		t.Fatal("no kernel log samples in the manifest")
	}
}

func codes(fields []string) []int {
	set := map[int]bool{}
	for _, f := range fields {
		if n, err := strconv.Atoi(f); err == nil {
			set[n] = true
		}
	}
	return sortedCodes(set)
}

func sortedCodes(set map[int]bool) []int {
	out := []int{}
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

func FuzzParseLine(f *testing.F) {
	f.Add("NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
	f.Add("NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained")
	f.Fuzz(func(t *testing.T, line string) {
		e, ok := ParseLine(line)
		if ok && (e.Code <= 0 || e.Code > 10000) {
			t.Fatalf("code %d accepted", e.Code)
		}
		_ = e.Action()
	})
}
