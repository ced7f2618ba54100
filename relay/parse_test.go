package relay

import (
	"testing"
	"unsafe"
)

// A subscription keeps its id and filters for as long as it is open:
// nothing in them may point into the REQ's frame, or the frame is held as
// long.
func TestFiltersHoldNoPartOfTheMessage(t *testing.T) {
	t.Parallel()
	msg := []byte(`["REQ","x",{"#e":["aa","bb"],"#t":["nostr"],"authors":["cc"],"ids":["dd"]},{"#p":["ee"]}]`)
	_, m, reason := parseMessage(msg)
	if reason != "" {
		t.Fatal(reason)
	}
	fs, reason := m.filters(0)
	if reason != "" {
		t.Fatal(reason)
	}
	lo, hi := uintptr(unsafe.Pointer(&msg[0])), uintptr(unsafe.Pointer(&msg[len(msg)-1]))
	inFrame := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= lo && p <= hi
	}
	if id, _ := m.subID(); inFrame(id) {
		t.Errorf("the subscription id %q points into the message", id)
	}
	for i, f := range fs {
		strs := append(append([]string{}, f.IDs...), f.Authors...)
		for name, values := range f.Tags {
			strs = append(append(strs, name), values...)
		}
		for _, s := range strs {
			if inFrame(s) {
				t.Errorf("filter %d: %q points into the message", i, s)
			}
		}
	}
	if len(fs[0].Tags["e"]) != 2 || len(fs[0].Tags["t"]) != 1 || len(fs[1].Tags["p"]) != 1 {
		t.Fatalf("tags changed: %v %v", fs[0].Tags, fs[1].Tags)
	}
}

func TestFilterValuesCountedAsSent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		req  string
		want int
	}{
		{`["REQ","x",{"ids":["a","b"],"#e":["x"],"kinds":[1,2,3],"authors":[],"limit":5}]`, 6},
		{`["REQ","x",{"#p":["a","a"],"#t":["b"]},{"since":1}]`, 3 + 1},
		{`["REQ","x",{},{"#e":null},{"search":"nostr"}]`, 3},
		{`["REQ","x","not a filter",{"#e":{"a":1}}]`, 2},
		{`["REQ","x"]`, 0},
	} {
		_, m, reason := parseMessage([]byte(c.req))
		if reason != "" {
			t.Fatal(reason)
		}
		if got := m.filterValues(); got != c.want {
			t.Errorf("%s: %d values, want %d", c.req, got, c.want)
		}
	}
}
