package relay

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
	"unicode/utf8"
)

// Websocket opcodes of the frames the relay writes.
const (
	opText  byte = 0x1
	opClose byte = 0x8
	opPing  byte = 0x9
	opPong  byte = 0xA
)

// frame is one outgoing websocket message: head, body and tail back to back.
// A broadcast shares one body (the event's JSON) among all subscribers and
// only head (`["EVENT","<sub id>",`) differs.
type frame struct {
	op               byte
	head, body, tail []byte
	done             *[]byte // a batchBufs buffer to give back once this frame is encoded
	latest           *latest // a broadcast a newer version of its address may replace while queued
}

// latest names the queued broadcast of one version of an address to one
// subscription.
type latest struct {
	s *sub
	v *version
	n uint64 // its place: the frames ever queued before it
}

func (f frame) size() int { return len(f.head) + len(f.body) + len(f.tail) }

// outbox is a connection's bounded queue of frames to write. Nothing that
// queues a frame ever waits on the network: broadcasts are refused when the
// queue is over its limit (and the caller drops the client), and a
// connection's own answers wait only for room in the queue.
type outbox struct {
	mu       sync.Mutex
	room     *sync.Cond
	ctrl     []frame // pings and pongs, written before data
	data     []frame // data[first:] are queued
	first    int
	queued   int // bytes of data frames queued or being written
	limit    int
	closed   bool   // no more frames
	farewell *frame // the close frame, written last
	wake     chan struct{}
	appended uint64                // data frames ever queued
	latests  map[latestKey]*latest // the queued broadcasts of replaceable and addressable events
}

type latestKey struct {
	s *sub
	a address
}

func newOutbox(limit int) *outbox {
	o := &outbox{limit: limit, wake: make(chan struct{}, 1)}
	o.room = sync.NewCond(&o.mu)
	return o
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// push queues a frame without waiting; false when the outbox is closed or
// the frame would take it over its limit.
func (o *outbox) push(f frame) bool { return o.queue(false, f) }

// pushLatest is push for a broadcast to subscription s of an event whose
// version is v (nil: it has none). A version of v's address that is still
// queued for s is replaced by v in its place when v is newer, and v is
// dropped when it is not: a reader behind a burst of republished lists is
// sent the newest of each, and its queue holds one version of each, where
// it would overflow with all of them.
func (o *outbox) pushLatest(f frame, s *sub, v *version) bool {
	if v == nil {
		return o.push(f)
	}
	k := latestKey{s, v.address}
	o.mu.Lock()
	if q, ok := o.latests[k]; ok && !o.closed {
		defer o.mu.Unlock()
		if !v.newer(q.v) {
			return true
		}
		i := o.first + int(q.n-o.taken())
		size := o.queued - o.data[i].size() + f.size()
		if size > o.limit {
			return false
		}
		q.v, o.queued, f.latest = v, size, q
		o.data[i] = f
		return true
	}
	o.mu.Unlock()
	f.latest = &latest{s: s, v: v}
	return o.push(f)
}

// taken is how many data frames ever queued have been taken to be
// written. Under o.mu.
func (o *outbox) taken() uint64 { return o.appended - uint64(len(o.data)-o.first) }

// pushAll is push for several frames at once: all or none.
func (o *outbox) pushAll(fs []frame) bool { return o.queue(false, fs...) }

// send queues an answer, waiting while the outbox is more than half full so
// that room is left for broadcasts; false once the outbox is closed.
func (o *outbox) send(f frame) bool { return o.queue(true, f) }

// sendAll is send for several frames at once, woken writer included.
func (o *outbox) sendAll(fs []frame) bool { return o.queue(true, fs...) }

func (o *outbox) queue(wait bool, fs ...frame) bool {
	size := 0
	for _, f := range fs {
		size += f.size()
	}
	o.mu.Lock()
	for wait && !o.closed && o.crowded(size) {
		o.room.Wait()
	}
	if o.closed || (!wait && o.queued+size > o.limit) {
		o.mu.Unlock()
		return false
	}
	for _, f := range fs {
		o.append(f)
	}
	o.mu.Unlock()
	o.signal()
	return true
}

// awaitRoom waits until send would queue size bytes without waiting; false
// once the outbox is closed.
func (o *outbox) awaitRoom(size int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for !o.closed && o.crowded(size) {
		o.room.Wait()
	}
	return !o.closed
}

// crowded says that size more bytes would take the queue over half its
// limit (a frame alone is always let in). Under o.mu.
func (o *outbox) crowded(size int) bool { return o.queued > 0 && o.queued+size > o.limit/2 }

func (o *outbox) append(f frame) {
	if o.first > 0 && len(o.data) == cap(o.data) {
		n := copy(o.data, o.data[o.first:])
		clear(o.data[n:])
		o.data, o.first = o.data[:n], 0
	}
	if f.latest != nil {
		if o.latests == nil {
			o.latests = map[latestKey]*latest{}
		}
		f.latest.n = o.appended
		o.latests[latestKey{f.latest.s, f.latest.v.address}] = f.latest
	}
	o.data = append(o.data, f)
	o.appended++
	o.queued += f.size()
}

// forget takes the frames from o.data[from:to], leaving the queue, out of
// latests. Under o.mu.
func (o *outbox) forget(from, to int) {
	for _, f := range o.data[from:to] {
		if f.latest != nil {
			delete(o.latests, latestKey{f.latest.s, f.latest.v.address})
		}
	}
}

// control queues a ping or pong ahead of the data.
func (o *outbox) control(f frame) {
	o.mu.Lock()
	if !o.closed {
		o.ctrl = append(o.ctrl, f)
	}
	o.mu.Unlock()
	o.signal()
}

// shut queues a close frame as the last thing to write and drops the data
// not yet written: nothing may follow a close frame.
func (o *outbox) shut(payload []byte) {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		o.farewell = &frame{op: opClose, body: payload}
		for _, f := range o.data[o.first:] {
			o.queued -= f.size()
		}
		o.latests = nil
		clear(o.data)
		o.data, o.first = o.data[:0], 0
		o.room.Broadcast()
	}
	o.mu.Unlock()
	o.signal()
}

// close refuses further frames and wakes whoever waits for room; frames
// already queued may still be written.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.room.Broadcast()
	o.mu.Unlock()
	o.signal()
}

// take appends to into the frames to write next: every control frame, then
// data frames up to about max bytes, then the close frame once nothing else
// is left. last reports that nothing may be written after these.
func (o *outbox) take(into []frame, max int) (frames []frame, last bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	into = append(into, o.ctrl...)
	clear(o.ctrl)
	o.ctrl = o.ctrl[:0]
	n, size := o.first, 0
	for n < len(o.data) && (n == o.first || size+o.data[n].size() <= max) {
		size += o.data[n].size()
		n++
	}
	into = append(into, o.data[o.first:n]...)
	o.forget(o.first, n)
	clear(o.data[o.first:n])
	if o.first = n; o.first == len(o.data) {
		o.data, o.first = o.data[:0], 0
	}
	if !o.closed || len(o.data) > 0 {
		return into, false
	}
	if o.farewell != nil {
		into = append(into, *o.farewell)
		o.farewell = nil
	}
	return into, true
}

// written gives back the room of data frames written.
func (o *outbox) written(bytes int) {
	if bytes == 0 {
		return
	}
	o.mu.Lock()
	o.queued -= bytes
	o.room.Broadcast()
	o.mu.Unlock()
}

// writeBufs hold one batch of encoded frames while it is written; pooled,
// so idle connections keep no write buffer.
var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// writeFrames encodes frames into one buffer and writes it with a single
// call, so a batch costs one syscall and stays whole on the wire.
func writeFrames(c net.Conn, frames []frame, timeout time.Duration) (dataBytes int, err error) {
	bp := writeBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, f := range frames {
		buf = appendFrameHeader(buf, f.op, f.size())
		buf = append(buf, f.head...)
		buf = append(buf, f.body...)
		buf = append(buf, f.tail...)
		if f.done != nil { // the last frame of a stored batch: the batch is encoded
			*f.done = (*f.done)[:0]
			batchBufs.Put(f.done)
		}
		if f.op == opText {
			dataBytes += f.size()
		}
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	_, err = c.Write(buf)
	if cap(buf) <= 2*maxWriteBatch {
		*bp = buf[:0]
		writeBufs.Put(bp)
	}
	return dataBytes, err
}

// appendFrameHeader appends the header of an unmasked, final server frame.
func appendFrameHeader(b []byte, op byte, n int) []byte {
	b = append(b, 0x80|op)
	switch {
	case n <= 125:
		return append(b, byte(n))
	case n <= 0xFFFF:
		return append(b, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 127), uint64(n))
	}
}

// closePayload is a close frame's body: the code, then a reason cut to fit
// the 125 bytes a control frame may carry.
func closePayload(code int, reason string) []byte {
	for len(reason) > 123 {
		_, n := utf8.DecodeLastRuneInString(reason)
		reason = reason[:len(reason)-n]
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}
