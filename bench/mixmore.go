package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
)

// moreShapes are queries clients send besides issue 27's six (-mix-more):
// lookups by id, reactions and replies to a note, notifications of chosen
// kinds, paging back through an author's or the whole relay's history,
// what came since a moment, and an author's profile and lists. Their keys
// come from events sampled evenly from the data, so authors are drawn by
// activity as the data has them, and times as events have them.
var moreShapes = []mixShape{
	{"ids", `{"ids":[20]}`, func(q *mixDraw) string {
		ids := make([]string, 20)
		for i := range ids {
			ids[i] = q.sampled().ID
		}
		return q.filter(map[string]any{"ids": ids})
	}},
	{"reactions", `{"kinds":[7],"#e":[note]}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"kinds": []int{7}, "#e": []string{q.tag(7, "e")}})
	}},
	{"replies", `{"#e":[note]}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"#e": []string{q.tag(1, "e")}})
	}},
	{"notifications by kind", `{"#p":[1],"kinds":[1,6,7],"limit":100}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"#p": []string{q.tag(-1, "p")}, "kinds": []int{1, 6, 7}, "limit": 100})
	}},
	{"author notes page", `{"authors":[1],"kinds":[1],"until":t,"limit":50}`, func(q *mixDraw) string {
		e := q.sampledOf(1)
		return q.filter(map[string]any{"authors": []string{e.PubKey}, "kinds": []int{1}, "until": e.CreatedAt, "limit": 50})
	}},
	{"author page", `{"authors":[1],"until":t,"limit":20}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"authors": []string{q.sampled().PubKey}, "until": q.sampled().CreatedAt, "limit": 20})
	}},
	{"global page", `{"kinds":[1],"until":t,"limit":100}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"kinds": []int{1}, "until": q.sampled().CreatedAt, "limit": 100})
	}},
	{"since", `{"kinds":[1,6,7],"since":t,"limit":500}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"kinds": []int{1, 6, 7}, "since": q.sampled().CreatedAt, "limit": 500})
	}},
	{"profile and lists", `{"authors":[1],"kinds":[0,3,10002]}`, func(q *mixDraw) string {
		return q.filter(map[string]any{"authors": []string{q.sampled().PubKey}, "kinds": []int{0, 3, 10002}})
	}},
}

// mixShapesWith is the six shapes, and moreShapes when there is a sample.
func mixShapesWith(s *mixSample) []mixShape {
	if s == nil {
		return mixShapes
	}
	return append(mixShapes[:len(mixShapes):len(mixShapes)], moreShapes...)
}

// sampled is what moreShapes need of an event.
type sampled struct {
	ID        string     `json:"id"`
	PubKey    string     `json:"pubkey"`
	CreatedAt int64      `json:"created_at"`
	Kind      int        `json:"kind"`
	Tags      [][]string `json:"tags"`
}

// mixSample is about 20,000 of the mix's events, taken evenly.
type mixSample struct {
	events []sampled
	of     map[string][]int // indexes into events: by kind ("1"), by a tag they have ("e", "p"), by both ("7e")
}

// sampleMix reads the sample from the events file of n events.
func sampleMix(path string, n int, seed uint64) (*mixSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(seed, 71))
	s := &mixSample{of: map[string][]int{}}
	p := min(1, 20_000/float64(max(n, 1)))
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if r.Float64() >= p {
			continue
		}
		var e sampled
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, err
		}
		i := len(s.events)
		s.events = append(s.events, e)
		s.of[fmt.Sprint(e.Kind)] = append(s.of[fmt.Sprint(e.Kind)], i)
		for _, name := range []string{"e", "p"} {
			if tagValue(e, name) != "" {
				s.of[name] = append(s.of[name], i)
				s.of[fmt.Sprint(e.Kind, name)] = append(s.of[fmt.Sprint(e.Kind, name)], i)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, need := range []string{"1", "7e", "1e", "p"} {
		if len(s.of[need]) == 0 {
			return nil, fmt.Errorf("%s: no events of kind and tag %q sampled", path, need)
		}
	}
	return s, nil
}

func (q *mixDraw) sampled() sampled { return q.sample.events[q.r.IntN(len(q.sample.events))] }

func (q *mixDraw) sampledOf(kind int) sampled { return q.pick(fmt.Sprint(kind)) }

func (q *mixDraw) pick(key string) sampled {
	in := q.sample.of[key]
	return q.sample.events[in[q.r.IntN(len(in))]]
}

// tag is the first value of the tag name in a sampled event of kind (-1:
// any) that has one.
func (q *mixDraw) tag(kind int, name string) string {
	if kind < 0 {
		return tagValue(q.pick(name), name)
	}
	return tagValue(q.pick(fmt.Sprint(kind, name)), name)
}

func tagValue(e sampled, name string) string {
	for _, t := range e.Tags {
		if len(t) > 1 && t[0] == name {
			return t[1]
		}
	}
	return ""
}
