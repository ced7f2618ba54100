package strfry

import "github.com/outpost-relay/outpost/policies"

// LoadCache is loadCache for the tests, without the bytes it took.
func LoadCache(l *policies.BanList, path string) (found bool, err error) {
	found, _, err = loadCache(l, path)
	return found, err
}
