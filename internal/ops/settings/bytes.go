package settings

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Bytes is an amount of storage, written like 256MiB, 1GiB, 100MB or 4096
// (bytes). Both binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB)
// units are read; it is shown in binary units.
type Bytes int64

var byteUnits = []struct {
	name string
	size float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1},
}

var errBytes = errors.New("want an amount of storage like 256MiB, 1GiB or 500MB")

// UnmarshalText reads an amount with or without a unit.
func (b *Bytes) UnmarshalText(text []byte) error {
	s := strings.ToLower(strings.TrimSpace(string(text)))
	size := 1.0
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(s, u.name); ok {
			s, size = strings.TrimSpace(n), u.size
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsNaN(v) || v*size >= math.MaxInt64 {
		return errBytes
	}
	*b = Bytes(math.Round(v * size))
	return nil
}

// MarshalText writes b as String does.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// String writes b in the largest binary unit it fills, to one decimal.
func (b Bytes) String() string {
	if b == 0 {
		return "0"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(b), 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + units[i]
}
