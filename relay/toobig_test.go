package relay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// A frame beyond the read limit ends the connection with close code 1009
// (message too big), whatever its size: the relay reads and discards the
// rest of the frame, so the close frame reaches the client instead of a
// reset (1006, which frames of 2 MB and more used to get).
func TestOverLongFrameCloses1009(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, size := range []int{600 << 10, 2 << 20, 5 << 20} {
		x := dialWire(t, e.url, 0)
		frame := []byte(`["EVENT",{"content":"` + strings.Repeat("x", size) + `"}]`)
		// Written whole before anything is read, as simple clients do: the
		// relay must neither reset the connection meanwhile nor close it
		// before the client reads the close frame.
		x.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := x.c.WriteMessage(websocket.TextMessage, frame); err != nil {
			t.Fatalf("writing a frame of %d bytes: %v", len(frame), err)
		}
		_, err := x.read(10 * time.Second)
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("a frame of %d bytes: %v, want close 1009", len(frame), err)
		}
	}
}
