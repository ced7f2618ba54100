package nostrclient

import (
	"testing"
)

// What a relay may send, hostile or not, and what the read loop makes of it.
func TestParse(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]*Message{
		`not json`:                              nil,
		`["EVENT"`:                              nil,
		`["EOSE"]`:                              nil,
		`{"EOSE":"s"}`:                          nil,
		`["EOSE","s"]`:                          {Label: "EOSE", Sub: "s"},
		`["EVENT","s"]`:                         {Label: "EVENT", Sub: "s"},
		`["EVENT","s","garbage"]`:               {Label: "EVENT", Sub: "s"},
		`["EVENT","s",{"kind":"one"}]`:          {Label: "EVENT", Sub: "s"},
		`["NOTICE","hi"]`:                       {Label: "NOTICE", Text: "hi"},
		`["AUTH","challenge"]`:                  {Label: "AUTH", Text: "challenge"},
		`["OK","id",true]`:                      {Label: "OK", Sub: "id", OK: true},
		`["OK","id",false,"blocked: spam"]`:     {Label: "OK", Sub: "id", Text: "blocked: spam"},
		`["CLOSED","s","error: shutting down"]`: {Label: "CLOSED", Sub: "s", Text: "error: shutting down"},
		`["NEG-MSG","n","6100"]`:                {Label: "NEG-MSG", Sub: "n", Text: "6100"},
		`["NEG-ERR","n","blocked: too big"]`:    {Label: "NEG-ERR", Sub: "n", Text: "blocked: too big"},
	} {
		m, ok := parse([]byte(raw))
		if want == nil {
			if ok {
				t.Errorf("%s: parsed as %+v", raw, m)
			}
			continue
		}
		if !ok || m != *want {
			t.Errorf("%s: %+v (%v), want %+v", raw, m, ok, *want)
		}
	}
	m, ok := parse([]byte(`["EVENT","s",{"id":"ab","kind":38000,"content":"x","tags":[]}]`))
	if !ok || m.Event == nil || m.Event.ID != "ab" || m.Event.Kind != 38000 {
		t.Fatalf("an event: %+v", m)
	}
}
