package web

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/boombuler/barcode/qr"
)

// maxQRBytes is the most a QR code here holds: a version-40 code at level L
// takes 2,953 bytes, enough for a Cashu token of several proofs.
const maxQRBytes = 2953

// handleQR draws the request body (text/plain) as an SVG QR code. Tokens
// are secrets, so they come in a POST body, never in a URL, and the answer
// is neither stored nor cached.
func handleQR(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxQRBytes+1))
	text := strings.TrimSpace(string(body))
	switch {
	case err != nil || len(text) > maxQRBytes:
		qrError(w, http.StatusRequestEntityTooLarge, "too_large", "this is too long for one QR code; copy the text instead")
		return
	case text == "":
		qrError(w, http.StatusBadRequest, "empty", "send the text to encode as the request body")
		return
	}
	svg, err := qrSVG(text)
	if err != nil {
		qrError(w, http.StatusRequestEntityTooLarge, "too_large", "this is too long for one QR code; copy the text instead")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(svg)))
	w.Write([]byte(svg))
}

func qrError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"error\":%q,\"message\":%q}\n", code, msg)
}

// qrSVG encodes text at the highest error correction that still fits a
// code phones read easily, and draws it as one path of dark runs with the
// four-module quiet zone the standard asks for.
func qrSVG(text string) (string, error) {
	level := qr.M
	if len(text) > 1000 {
		level = qr.L
	}
	code, err := qr.Encode(text, level, qr.Auto)
	if err != nil {
		return "", err
	}
	n := code.Bounds().Dx()
	const quiet = 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, n+2*quiet, n+2*quiet)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n+2*quiet, n+2*quiet)
	for y := 0; y < n; y++ {
		for x := 0; x < n; {
			if !dark(code.At(x, y)) {
				x++
				continue
			}
			run := 1
			for x+run < n && dark(code.At(x+run, y)) {
				run++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x+quiet, y+quiet, run, run)
			x += run
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String(), nil
}

func dark(c interface{ RGBA() (r, g, b, a uint32) }) bool {
	r, _, _, _ := c.RGBA()
	return r < 0x8000
}
