package kv

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/diskspace"
)

// memLogs keeps every memtable log (*.mem) badger writes backed by
// allocated blocks, so that badger never writes one on a full disk.
//
// badger v4.8.0 creates a memtable's log when it rotates memtables
// (DB.ensureRoomForWrite → newMemTable → z.OpenMmapFile): an ftruncate to
// 2×MemTableSize, a shared writable mapping of all of it, and then every
// write goes to that mapping (logFile.writeEntry, a copy into lf.Data).
// The file is sparse: the first write to each page needs a block from the
// filesystem, in a page fault. With none left (another process filled the
// disk) the fault is a SIGBUS, which Go cannot recover from in badger's
// goroutine: outpost died. badger never calls fallocate.
//
// So outpost allocates them itself: at Open the log badger writes now, in
// place, before anything writes; and always the next one ahead, made under
// a temporary name, allocated past its end (FALLOC_FL_KEEP_SIZE: its size
// stays 0, which is how badger's OpenMmapFile tells a new file) and linked
// to the name badger will open — badger's ftruncate then keeps the blocks.
// A poll every pollEvery sees badger move on to it (its size is no longer
// 0) and makes the next: badger needs it only after a whole memtable
// (16 MiB) more of writes. When it cannot be made, writes are refused until
// it can; when it can only by leaving less than MinFreeSpace free, the
// watcher is told to want its size besides (and refuses writes as for low
// space): the memtable badger has just left still needs room to be flushed
// to a table, and space taken by a log ahead is not seen going as badger
// writes it.
//
// badger's value log (*.vlog, 2×ValueLogFileSize mapped the same way) is
// written only for values of 1 MiB or more (ValueThreshold): none with
// outpost's limits, unless an operator raises --relay-max-message-length
// past 1 MiB; so it is not allocated ahead, beyond its header, written as
// badger opens.
type memLogs struct {
	dir   string
	size  int64              // what badger maps and may write of each log
	min   int64              // free space to leave: MinFreeSpace
	space *diskspace.Watcher // told when there is no room for the next log
	log   *slog.Logger

	mu     sync.Mutex  // one poll at a time; guards cur and failed
	cur    int         // the log badger writes now
	failed bool        // the last attempt to make the next log failed (logged once)
	ready  atomic.Bool // the next log is allocated: writes may go ahead
}

// discardSize is the size of badger's DISCARD file (InitDiscardStats).
const discardSize = 1 << 20

// nextMemLogTemp is where the next log is made before it gets its name:
// badger only reads *.mem, *.sst and *.vlog files of its directory.
const nextMemLogTemp = "outpost-next-memtable.tmp"

// openMemLogs allocates the log badger writes now and makes the next one.
// Call it right after badger.Open, before anything writes. It fails when
// the current log cannot be allocated; where the filesystem cannot allocate
// ahead at all, it warns and returns nil: outpost then runs as before.
func openMemLogs(dir string, size int64, space *diskspace.Watcher, log *slog.Logger) (*memLogs, error) {
	cur, err := lastMemLog(dir)
	if err != nil {
		return nil, err
	}
	if err := allocate(filepath.Join(dir, memLogName(cur)), size); errors.Is(err, errNoAllocate) {
		log.Warn("the data dir's filesystem cannot allocate files ahead (fallocate): a disk filled by another process while outpost writes can kill it (SIGBUS)", "err", err)
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("allocate badger's memtable log %s: %w", memLogName(cur), err)
	}
	// badger's discard stats, a 1 MiB mapping it writes only for values in
	// the value log (over 1 MiB; outpost writes none): allocated all the same.
	if err := allocate(filepath.Join(dir, "DISCARD"), discardSize); err != nil {
		return nil, err
	}
	m := &memLogs{dir: dir, size: size, min: space.Status().Min, space: space, log: log, cur: cur}
	m.poll()
	return m, nil
}

// Ready reports whether writes may go ahead: the log badger opens next is
// allocated. A nil memLogs (allocation off) is always ready.
func (m *memLogs) Ready() bool { return m == nil || m.ready.Load() }

// poll follows badger to the log it writes now and makes the next one.
func (m *memLogs) poll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		next := filepath.Join(m.dir, memLogName(m.cur+1))
		fi, err := os.Stat(next)
		if err != nil || fi.Size() == 0 {
			break
		}
		m.cur++
		// Ours is allocated already (this costs nothing then); one badger
		// made itself, having got there first, is allocated now.
		if err := allocate(next, m.size); err != nil {
			m.log.Error("cannot allocate badger's memtable log", "file", next, "err", err)
		}
	}
	err := m.makeNext()
	switch {
	case errors.Is(err, errNoRoom):
		m.space.Need(m.size) // the watcher refuses writes, and says why
		err = nil
	case err == nil:
		m.space.Need(0)
	}
	m.setReady(err)
}

// errNoRoom: the next log would leave less than MinFreeSpace free.
var errNoRoom = errors.New("no room for badger's next memtable log besides the space kept free")

// makeNext makes the log after cur, allocated, unless it is there.
func (m *memLogs) makeNext() error {
	path := filepath.Join(m.dir, memLogName(m.cur+1))
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if free, err := diskspace.Free(m.dir); err != nil {
		return err
	} else if free-m.size < m.min {
		return errNoRoom
	}
	tmp := filepath.Join(m.dir, nextMemLogTemp)
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	err = allocateAhead(f, m.size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path)
	}
	os.Remove(tmp)
	if errors.Is(err, fs.ErrExist) {
		// badger made it meanwhile, sparse, and may be writing it.
		err = allocate(path, m.size)
	}
	if errors.Is(err, syscall.ENOSPC) {
		// The space measured above went meanwhile (a table badger wrote).
		return errNoRoom
	}
	return err
}

// setReady records the outcome of making the next log, logging changes once.
func (m *memLogs) setReady(err error) {
	switch {
	case err == nil:
		if m.failed {
			m.log.Info("badger's next memtable log is allocated: writes resume")
		}
		m.failed = false
		m.ready.Store(true)
	case !m.failed:
		m.failed = true
		m.ready.Store(false)
		m.log.Warn("cannot allocate badger's next memtable log: refusing writes until it can (reads still work)",
			"size", m.size, "err", err)
	}
}

// Close removes the log made ahead, which badger, closed, will not open:
// left there, it would be taken for one a kill left behind. Call it only
// after badger has closed.
func (m *memLogs) Close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	path := filepath.Join(m.dir, memLogName(m.cur+1))
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		os.Remove(path)
	}
}

// memLogName is badger's name for memtable log fid (DB.mtFilePath).
func memLogName(fid int) string { return fmt.Sprintf("%05d.mem", fid) }

// lastMemLog is the highest-numbered memtable log in dir: after
// badger.Open, the one it writes (the others are replayed and being
// flushed).
func lastMemLog(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	last := -1
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".mem")
		if !ok {
			continue
		}
		if fid, err := strconv.Atoi(name); err == nil && fid > last {
			last = fid
		}
	}
	if last < 0 {
		return 0, fmt.Errorf("no memtable log in %s after badger opened it", dir)
	}
	return last, nil
}

// closeRoom is the space badger's Close needs: it flushes its memtable to a
// table (as large as the memtable), written through a mapping like the
// logs, so that on a full disk it would die of SIGBUS as it closes.
const closeRoom = 2 * memTableSize

// roomToClose returns an error when the disk has too little space left for
// badger to close, after syncing the memtable logs to disk: what badger
// holds is then in them, replayed at the next start, as after a kill.
func (m *memLogs) roomToClose() error {
	if m == nil {
		return nil
	}
	left, err := diskspace.Left(m.dir)
	if err != nil || left >= closeRoom {
		return nil
	}
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".mem") {
			errs = append(errs, syncFile(filepath.Join(m.dir, e.Name())))
		}
	}
	return errors.Join(append(errs, fmt.Errorf("badger was not closed: %v left on the data dir's filesystem, too little for the table it writes as it closes (on a full disk that write would kill outpost); "+
		"what was not written is in its log, which it replays at the next start", settings.Bytes(left)))...)
}

// syncFile writes what is cached of the file at path to disk, pages
// written through another process's or goroutine's mapping included.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
