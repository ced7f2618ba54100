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
// comma-separated list) or encoding.TextUnmarshalers.
package settings

import (
	"encoding"
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

var (
	durationType = reflect.TypeFor[time.Duration]()
	textType     = reflect.TypeFor[encoding.TextUnmarshaler]()
)

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
		usage := f.Tag.Get("usage")
		p := v.Field(i).Addr()
		switch {
		case f.Type == durationType && unit == "ms":
			fs.Var(millis{p.Interface().(*time.Duration)}, name, usage)
		case p.Type().Implements(textType):
			fs.TextVar(p.Interface().(encoding.TextUnmarshaler), name, v.Field(i).Interface().(encoding.TextMarshaler), usage)
		case f.Type == durationType:
			fs.DurationVar(p.Interface().(*time.Duration), name, v.Field(i).Interface().(time.Duration), usage)
		case f.Type.Kind() == reflect.String:
			fs.StringVar(p.Interface().(*string), name, v.Field(i).String(), usage)
		case f.Type.Kind() == reflect.Bool:
			fs.BoolVar(p.Interface().(*bool), name, v.Field(i).Bool(), usage)
		case f.Type.Kind() == reflect.Int:
			fs.IntVar(p.Interface().(*int), name, int(v.Field(i).Int()), usage)
		case f.Type.Kind() == reflect.Int64:
			fs.Int64Var(p.Interface().(*int64), name, v.Field(i).Int(), usage)
		case f.Type == reflect.TypeFor[[]string]():
			fs.Var(list{p.Interface().(*[]string)}, name, usage)
		default:
			panic(fmt.Sprintf("settings: cannot bind %s (%s) to --%s", f.Name, f.Type, name))
		}
	}
}

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
		return fmt.Errorf("%q is not a whole number of milliseconds", s)
	}
	*m.p = time.Duration(n) * time.Millisecond
	return nil
}
