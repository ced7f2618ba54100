package mintdir

import (
	"encoding/json"
	"strings"
	"testing"
)

// A mint id has one form, ID; records and answers carry its UUID spelling,
// as they did when it was a string.
func TestIDInRecords(t *testing.T) {
	t.Parallel()
	id, other := NewID(), NewID()
	b, err := json.Marshal(&Mint{ID: id, Status: StatusOnline})
	if err != nil || !strings.Contains(string(b), `"id":"`+id.String()+`"`) || strings.Contains(string(b), "merged_into") {
		t.Fatalf("%s %v", b, err)
	}
	b, _ = json.Marshal(&Mint{ID: id, MergedInto: other})
	var m Mint
	if err := json.Unmarshal(b, &m); err != nil || m.ID != id || m.MergedInto != other || !strings.Contains(string(b), `"merged_into":"`+other.String()+`"`) {
		t.Fatalf("round trip of %s: %+v %v", b, m, err)
	}
	// A damaged id is an error, not the zero id.
	if err := json.Unmarshal([]byte(`{"id":"not-an-id"}`), &m); err == nil {
		t.Fatal("a malformed id was read")
	}
	if p, err := ParseID(strings.ToUpper(id.String())); err != nil || p != id {
		t.Fatalf("ParseID of the upper-case form: %v %v", p, err)
	}
}
