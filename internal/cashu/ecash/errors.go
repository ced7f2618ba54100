package ecash

import (
	"errors"
	"fmt"
)

// Problem classifies what went wrong with the mint.
type Problem int

const (
	// Unreachable: no answer, a timeout, or a server error; trying again
	// later may work.
	Unreachable Problem = iota + 1
	// Refused: the mint answered with a Cashu error (NUT-00: HTTP 400
	// {detail, code}), e.g. "proofs already spent".
	Refused
	// Incompatible: the mint answered, but not as the protocol says (an
	// unknown endpoint, a keyset id its keys do not derive, a signature
	// whose DLEQ proof fails, an answer we cannot read). Trying again will
	// not help until the mint or this wallet changes.
	Incompatible
	// Faulty: the mint answered, but signatures in its answer do not
	// verify (a wrong key, a missing or failing DLEQ proof, a wrong
	// amount or keyset). Nothing unverified is kept; the next request may
	// go well.
	Faulty
)

func (p Problem) String() string {
	switch p {
	case Unreachable:
		return "unreachable"
	case Refused:
		return "refused"
	case Incompatible:
		return "incompatible"
	case Faulty:
		return "faulty"
	}
	return "unknown"
}

// MintError is an error about the mint.
type MintError struct {
	Problem Problem
	Mint    string
	Path    string // the endpoint, e.g. /v1/swap
	Status  int    // HTTP status, 0 without an answer
	Code    int    // Cashu error code, when the mint gave one
	Detail  string // the mint's message, or ours
	NotSent bool   // the request never left (no connection could be made)
	Err     error
}

func (e *MintError) Error() string {
	s := fmt.Sprintf("mint %s %s: %s", e.Mint, e.Path, e.Problem)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Code != 0 {
		s += fmt.Sprintf(" code %d", e.Code)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *MintError) Unwrap() error { return e.Err }

// AsMintError returns the *MintError in err's chain, or nil.
func AsMintError(err error) *MintError {
	var me *MintError
	if errors.As(err, &me) {
		return me
	}
	return nil
}

// ProblemOf is the Problem of err, or 0 when err is not about the mint.
func ProblemOf(err error) Problem {
	if me := AsMintError(err); me != nil {
		return me.Problem
	}
	return 0
}

// Errors of the wallet itself.
var (
	// ErrInsufficientFunds: the wallet does not hold enough spendable ecash.
	ErrInsufficientFunds = errors.New("ecash: not enough funds")
	// ErrClosed: the wallet was closed.
	ErrClosed = errors.New("ecash: wallet closed")
	// ErrSpent: ecash offered to the wallet is already spent (or pending).
	ErrSpent = errors.New("ecash: already spent")
	// ErrUnknownQuote: the wallet has no record of this quote.
	ErrUnknownQuote = errors.New("ecash: unknown quote")
)

func incompatible(mint, path, format string, args ...any) *MintError {
	return &MintError{Problem: Incompatible, Mint: mint, Path: path, Detail: fmt.Sprintf(format, args...)}
}

// answered reports whether err (of a request to the mint) says the
// request can no longer reach the mint: it refused, the request never
// left, or the mint answered at all (even 500: its handler is done) —
// except a proxy's 502 or 504, behind which the mint may still be working
// on it.
func answered(err error) bool {
	me := AsMintError(err)
	if me == nil {
		return false
	}
	proxied := me.Status == 502 || me.Status == 504
	return me.Problem == Refused || me.NotSent || (me.Status != 0 && !proxied)
}
