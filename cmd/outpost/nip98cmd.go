package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// nip98CLI is "outpost nip98 keygen|sign": a key to try the faucet with, and
// the Authorization header of a NIP-98 request, so curl can do the rest.
func nip98CLI(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	const groupUsage = "usage:\n  outpost nip98 keygen\n  outpost nip98 sign [--nsec KEY] [--method POST] [--body JSON | --body-file F] <url>\n\n" +
		"\"outpost nip98 <subcommand> --help\" says more.\n"
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && isHelp(args[0]) {
			fmt.Fprint(stdout, groupUsage)
			return flag.ErrHelp
		}
		return usageErrorf("nip98", "nip98 needs a subcommand: keygen or sign")
	}
	switch args[0] {
	case "keygen":
		return nip98Keygen(args[1:], stdout)
	case "sign":
		return nip98Sign(args[1:], getenv, stdin, stdout)
	default:
		return usageErrorf("nip98", "unknown command \"nip98 %s\"; nip98 has keygen, sign", args[0])
	}
}

func nip98Keygen(args []string, stdout io.Writer) error {
	fs := newFlagSet("nip98 keygen")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: outpost nip98 keygen\n\nprints a new key as OUTPOST_NSEC=nsec1... and OUTPOST_NPUB=npub1... lines;\n`export $(outpost nip98 keygen)` sets both for \"outpost nip98 sign\".\n")
	}
	if err := parseFlags(fs, "nip98 keygen", args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("nip98 keygen", "nip98 keygen takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	nsec, _ := nip19.EncodePrivateKey(sk)
	fmt.Fprintf(stdout, "OUTPOST_NSEC=%s\nOUTPOST_NPUB=%s\n", nsec, pubkey.NPub(pk))
	return nil
}

func nip98Sign(args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet("nip98 sign")
	nsec := fs.String("nsec", "", "the signing key, nsec or hex")
	method := fs.String("method", "POST", "HTTP method of the request")
	body := fs.String("body", "", "the request body, exactly as sent (its sha256 goes in the payload tag)")
	bodyFile := fs.String("body-file", "", "read the body from this file (- for stdin)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: outpost nip98 sign [--nsec KEY] [--method POST] [--body JSON | --body-file F] <url>\n\n"+
			"prints the value of an Authorization header for one request: Nostr <base64 kind-27235 event>,\n"+
			"valid for 60 seconds and once. The key comes from --nsec or OUTPOST_NSEC.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, "nip98 sign", reorder(args), stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("nip98 sign", "nip98 sign takes the request URL")
	}
	if *nsec == "" {
		*nsec = getenv(settings.EnvName("nsec"))
	}
	sk, err := secretKey(*nsec)
	if err != nil {
		return err
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", fs.Arg(0))
	}
	data := []byte(*body)
	switch *bodyFile {
	case "":
	case "-":
		data, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
	default:
		data, err = os.ReadFile(*bodyFile)
	}
	if err != nil {
		return err
	}
	h, err := nip98.Sign(sk, strings.ToUpper(*method), fs.Arg(0), data, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, h)
	return nil
}

// secretKey reads an nsec or a 64-character hex key.
func secretKey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("no key: give --nsec or set %s (outpost nip98 keygen makes one)", settings.EnvName("nsec"))
	}
	if strings.HasPrefix(s, "nsec1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "nsec" {
			return "", errors.New("--nsec: not a valid nsec")
		}
		s = v.(string)
	}
	if _, err := nostr.GetPublicKey(s); err != nil || len(s) != 64 {
		return "", errors.New("--nsec: not a valid secret key (nsec or 64-character hex)")
	}
	return strings.ToLower(s), nil
}
