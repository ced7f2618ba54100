// Package settings is how outpost's packages declare their operator
// settings, so each is declared once, next to the code that uses it: a
// struct field tagged with its flag name and help text, its default in the
// package's defaults, its check in the package's Valid method. cmd/outpost
// only binds the tagged fields to flags (Bind) and reads each flag's
// OUTPOST_* environment twin.
//
//	Cooldown time.Duration `flag:"faucet-cooldown" usage:"one paid claim per pubkey per this"`
//	SlowRTT  time.Duration `flag:"probe-slow-ms,ms" usage:"..."` // given in milliseconds
//
// Fields may be strings, bools, ints, int64s, durations, []string (a
// comma-separated list), Bytes or other encoding.TextUnmarshalers. A bad
// value is refused with the form expected, in words; durations are shown as
// people write them (24h, not 24h0m0s).
package settings

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// EnvName is the environment twin of a flag: data-dir → OUTPOST_DATA_DIR.
func EnvName(flagName string) string {
	return "OUTPOST_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// FromEnv sets each flag of the parsed fs that was not given on the command
// line from its environment twin, when twin names one ("" for a flag
// without) and the environment sets it. It returns the flags given either
// way, and every bad value, each naming its variable.
func FromEnv(fs *flag.FlagSet, getenv func(string) string, twin func(flagName string) string) (given map[string]bool, err error) {
	given = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var errs []error
	fs.VisitAll(func(fl *flag.Flag) {
		env := twin(fl.Name)
		if given[fl.Name] || env == "" {
			return
		}
		if v := getenv(env); v != "" {
			given[fl.Name] = true
			if err := fl.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%s: %v", env, v, err))
			}
		}
	})
	return given, errors.Join(errs...)
}

// Error is a bad value of one setting; it names the flag and its twin.
type Error struct {
	Flag    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("invalid --%s (%s): %s", e.Flag, EnvName(e.Flag), e.Message)
}

// Errorf makes the Error of the setting bound to flagName.
func Errorf(flagName, format string, args ...any) error {
	return &Error{Flag: flagName, Message: fmt.Sprintf(format, args...)}
}

var durationType = reflect.TypeFor[time.Duration]()

// Bind defines a flag on fs for every tagged field of the struct s points
// to, with the field's current value as its default. It panics on a field
// type it cannot bind: that is a programming error, found at start-up.
func Bind(fs *flag.FlagSet, s any) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		tag, ok := f.Tag.Lookup("flag")
		if !ok {
			continue
		}
		name, unit, _ := strings.Cut(tag, ",")
		p := v.Field(i).Addr().Interface()
		if f.Type == durationType && unit == "ms" {
			p = millis{p.(*time.Duration)}
		}
		Var(fs, p, name, f.Tag.Get("usage"))
	}
}

// Var defines one flag on fs for the variable p points to, by its type (see
// the package comment), with its current value as the default. A bad value
// is refused with the form expected, in words.
func Var(fs *flag.FlagSet, p any, name, usage string) {
	var v flag.Value
	switch p := p.(type) {
	case flag.Value:
		v = p
	case encoding.TextUnmarshaler:
		v = text{p}
	case *time.Duration:
		v = duration{p}
	case *string:
		v = str{p}
	case *bool:
		v = boolean{p}
	case *int:
		v = integer[int]{p}
	case *int64:
		v = integer[int64]{p}
	case *[]string:
		v = list{p}
	default:
		panic(fmt.Sprintf("settings: cannot bind %T to --%s", p, name))
	}
	fs.Var(v, name, usage)
}

// FormatDuration writes d as people write durations: 24h, 1h30m, 90s is
// 1m30s; time.Duration's own String adds zero units (24h0m0s).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

type duration struct{ p *time.Duration }

func (d duration) String() string {
	if d.p == nil {
		return "0s"
	}
	return FormatDuration(*d.p)
}

func (d duration) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return errors.New(`want a Go duration like 24h, 5m or 90s (units h, m, s, ms; days as hours: 7 days is 168h)`)
	}
	*d.p = v
	return nil
}

type integer[T int | int64] struct{ p *T }

func (n integer[T]) String() string {
	if n.p == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*n.p), 10)
}

func (n integer[T]) Set(s string) error {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || int64(T(v)) != v {
		return errors.New("want a whole number, like 120")
	}
	*n.p = T(v)
	return nil
}

type boolean struct{ p *bool }

func (b boolean) IsBoolFlag() bool { return true }

func (b boolean) String() string { return strconv.FormatBool(b.p != nil && *b.p) }

func (b boolean) Set(s string) error {
	v, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return errors.New("want true or false")
	}
	*b.p = v
	return nil
}

type str struct{ p *string }

func (v str) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v str) Set(s string) error { *v.p = s; return nil }

// text is a value that reads itself (encoding.TextUnmarshaler), and when it
// can, writes itself back for the default shown in help.
type text struct{ p encoding.TextUnmarshaler }

func (t text) String() string {
	if m, ok := t.p.(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	return ""
}

func (t text) Set(s string) error { return t.p.UnmarshalText([]byte(s)) }

// list is a comma-separated list; a value replaces the list.
type list struct{ p *[]string }

func (l list) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l list) Set(s string) error {
	*l.p = nil
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*l.p = append(*l.p, e)
		}
	}
	return nil
}

// millis is a duration given as a whole number of milliseconds.
type millis struct{ p *time.Duration }

func (m millis) String() string {
	if m.p == nil {
		return "0"
	}
	return strconv.FormatInt(m.p.Milliseconds(), 10)
}

func (m millis) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("want a whole number of milliseconds, like 2000")
	}
	*m.p = time.Duration(n) * time.Millisecond
	return nil
}
