package relay

import (
	"encoding/hex"
	"strconv"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr/nip45/hyperloglog"
)

// The relay's messages to clients, built straight into frames.

var closingBracket = []byte("]")

// eventHead is the part of an EVENT message before the event itself:
// `["EVENT","<sub id>",`. A subscription builds it once.
func eventHead(subID string) []byte {
	b := appendJSONString([]byte(`["EVENT",`), subID)
	return append(b, ',')
}

// eventFrame is an EVENT message for the subscription whose head is given,
// with body (the event's JSON) used as it is: not copied, never changed.
func eventFrame(head, body []byte) frame {
	return frame{op: opText, head: head, body: body, tail: closingBracket}
}

func textFrame(b []byte) frame { return frame{op: opText, body: b} }

func okMessage(id string, ok bool, reason string) frame {
	b := make([]byte, 0, 80+len(reason))
	b = append(b, `["OK",`...)
	b = appendJSONString(b, id)
	b = append(b, ',')
	b = strconv.AppendBool(b, ok)
	b = append(b, ',')
	b = appendJSONString(b, reason)
	return textFrame(append(b, ']'))
}

// labelled is a message of a label and string arguments: NOTICE, EOSE,
// CLOSED, AUTH, NEG-MSG, NEG-ERR.
func labelled(label string, args ...string) frame {
	n := len(label) + 4
	for _, a := range args {
		n += len(a) + 3
	}
	b := make([]byte, 0, n+8)
	b = append(b, '[')
	b = appendJSONString(b, label)
	for _, a := range args {
		b = append(b, ',')
		b = appendJSONString(b, a)
	}
	return textFrame(append(b, ']'))
}

func noticeMessage(msg string) frame           { return labelled("NOTICE", msg) }
func eoseMessage(subID string) frame           { return labelled("EOSE", subID) }
func closedMessage(subID, reason string) frame { return labelled("CLOSED", subID, reason) }
func authMessage(challenge string) frame       { return labelled("AUTH", challenge) }

// countMessage is a COUNT answer, with hll's registers when there is one.
func countMessage(subID string, n int64, hll *hyperloglog.HyperLogLog) frame {
	b := make([]byte, 0, 32+len(subID)+520)
	b = append(b, `["COUNT",`...)
	b = appendJSONString(b, subID)
	b = append(b, `,{"count":`...)
	b = strconv.AppendInt(b, n, 10)
	if hll != nil {
		b = append(b, `,"hll":"`...)
		b = hex.AppendEncode(b, hll.GetRegisters())
		b = append(b, '"')
	}
	return textFrame(append(b, "}]"...))
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
