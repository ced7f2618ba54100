package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/outpost-relay/outpost/internal/ops/atomicfile"
	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// serviceKey returns the service's Nostr secret key (hex): the configured one
// (hex or nsec), else the one kept in <dataDir>/service.key, created on the
// first start. It is written whole or not at all; an empty one, left by a
// kill before it was (by an earlier version), holds no key and is made anew.
func serviceKey(configured, dataDir string) (string, error) {
	if configured != "" {
		sk, err := parseSecretKey(configured)
		if err != nil {
			return "", settings.Errorf("secret-key", "%v", err)
		}
		return sk, nil
	}
	path := filepath.Join(dataDir, "service.key")
	b, err := os.ReadFile(path)
	if err == nil && len(b) > 0 {
		sk, err := parseSecretKey(strings.TrimSpace(string(b)))
		if err != nil {
			return "", fmt.Errorf("%s: %v", path, err)
		}
		return sk, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	sk := nostr.GeneratePrivateKey()
	if err := atomicfile.WriteFile(path, []byte(sk+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep the service key: %w", err)
	}
	return sk, nil
}

func parseSecretKey(s string) (string, error) {
	if strings.HasPrefix(s, "nsec1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "nsec" {
			return "", errors.New("not a valid nsec")
		}
		s = v.(string)
	}
	if len(s) != 64 {
		return "", errors.New("must be 64 hex characters or an nsec")
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", errors.New("must be 64 hex characters or an nsec")
	}
	if _, err := nostr.GetPublicKey(s); err != nil {
		return "", errors.New("not a valid secret key")
	}
	return strings.ToLower(s), nil
}
